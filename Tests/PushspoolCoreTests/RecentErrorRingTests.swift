import Testing
import PushspoolCore

/// A provider's recent failed answers: bounded, newest first, a run of one error in one entry, and
/// nothing of a reason kept but the provider's own word for it.
@Suite struct RecentErrorRingTests {
    static func error(_ code: String, _ reason: String?, at: Double) -> RecentError {
        RecentError(at: at, code: code, reason: reason, meaning: "m")
    }

    @Test func keepsTheNewestFirstAndNoMoreThanItsCapacity() {
        var ring = RecentErrorRing(capacity: 3)
        for i in 0..<5 { ring.note(Self.error(String(500 + i), nil, at: Double(i))) }
        #expect(ring.newestFirst.map(\.code) == ["504", "503", "502"])
        #expect(ring.totals == ["500": 1, "501": 1, "502": 1, "503": 1, "504": 1], "every answer counted, kept or not")
        ring.note(Self.error("505", nil, at: 5))
        ring.note(Self.error("506", nil, at: 6))
        #expect(ring.newestFirst.map(\.code) == ["506", "505", "504"], "round the ring again")
    }

    @Test func aRunOfOneErrorIsOneEntryWithItsCount() {
        var ring = RecentErrorRing(capacity: 2)
        ring.note(Self.error("503", nil, at: 1))
        for t in 2...10_001 { ring.note(Self.error("400", "BadDeviceToken", at: Double(t))) }
        let seen = ring.newestFirst
        #expect(seen.count == 2, "the error before the flood stays in view")
        #expect(seen[0].reason == "BadDeviceToken" && seen[0].count == 10_000 && seen[0].at == 10_001)
        #expect(seen[1].code == "503" && seen[1].count == 1)
        #expect(ring.totals == ["400": 10_000, "503": 1])
        // The same code with another reason is another entry.
        ring.note(Self.error("400", "Unregistered", at: 10_002))
        #expect(ring.newestFirst.map { $0.reason ?? "-" } == ["Unregistered", "BadDeviceToken"])
    }

    @Test func anEmptyRingShowsNothing() {
        #expect(RecentErrorRing().newestFirst.isEmpty)
        #expect(RecentErrorRing(capacity: 0).capacity == 1)
    }

    /// What is kept of an answer: its code, the provider's word, the table's sentence; never a
    /// handle, a token or a URL, whatever the reason quotes.
    @Test(arguments: [
        // platform, code, reason, kept reason, meaning starts with
        ("apns", "400", "BadDeviceToken", "BadDeviceToken", "The token is not a valid APNs token"),
        ("fcm", "400", "INVALID_ARGUMENT: The registration token is not a valid FCM registration token", "INVALID_ARGUMENT", "FCM refused"),
        ("fcm", "404", "UNREGISTERED", "UNREGISTERED", "The app instance is gone"),
        ("web", "0", "host-not-allowed: push.evil.example", "host-not-allowed", "The subscription's push service"),
        ("fcm", "transport", "connection to fcm.googleapis.com:443 lost before the response: reset", nil, "The provider could not be reached"),
        // A reason that quotes a device's URL or token keeps none of it.
        ("web", "transport", "not an https URL: http://push.example/wpush/v2/gAAAAABhSECRETHANDLE", nil, "The provider could not be reached"),
        ("web", "410", "https://fcm.googleapis.com/fcm/send/dGVzdA:APA91bSECRET", nil, "The browser subscription was removed"),
        ("fcm", "400", "dGVzdC10b2tlbi1ub3QtcmVhbA:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx", nil, "The provider answered with a failure"),
        ("apns", "400", "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9", nil, "The provider answered with a failure"),
        ("apns", "503", "ServiceUnavailable", "ServiceUnavailable", "The provider was unavailable"),
    ] as [(String, String, String, String?, String)])
    func keepsTheWordNeverTheText(platform: String, code: String, reason: String, kept: String?, meaning: String) {
        let e = RecentError(ProviderResult(.rejected, code: code, reason: reason), platform: Platform(rawValue: platform), at: 7)
        #expect(e.reason == kept)
        #expect(e.code == code && e.at == 7 && e.count == 1)
        #expect(e.meaning.hasPrefix(meaning), "\(e.meaning)")
        for secret in ["SECRET", "APA91b", "0a1b2c3d", "dGVzdC"] where reason.contains(secret) {
            #expect(!"\(e.code) \(e.reason ?? "") \(e.meaning)".contains(secret), "\(secret) kept")
        }
    }

    @Test(arguments: [("410", "410"), ("transport", "transport"), ("no-answer", "no-answer"), (nil, "none"), ("", "none"),
                      ("a code with spaces", "other"), ("https://x.example/y", "other"), ("0123456789abcdef0", "other")] as [(String?, String)])
    func codesAreShortLabels(code: String?, label: String) {
        #expect(RecentError.safeCode(code) == label)
    }
}
