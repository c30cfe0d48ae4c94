import Foundation
import Testing
import PushspoolCore
import PushspoolHTTP
@testable import PushspoolKit

/// The Web Push classification table, from recorded-style answers of the browsers' push services.
@Suite struct WebPushResponseTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test(arguments: [
        (201, [:], "", Disposition.delivered),
        (200, [:], "", .delivered),
        (202, [:], "", .delivered),
        (404, [:], "", .deviceGone(since: nil)),
        (410, [:], "{\"code\":410,\"errno\":106,\"error\":\"Gone\",\"message\":\"Request did not validate, subscription expired\"}", .deviceGone(since: nil)),
        (413, [:], "", .rejected),
        (400, [:], "invalid encryption", .rejected),
        (429, ["retry-after": "30"], "", .retry(after: 30)),
        (429, [:], "", .retry(after: nil)),
        (503, ["retry-after": "5"], "", .retry(after: 5)),
        (500, [:], "", .retry(after: nil)),
        (401, [:], "", .credentialsBroken),
        (403, [:], "the key in the authorization header does not correspond to the sender ID", .credentialsBroken),
    ] as [(Int, [String: String], String, Disposition)])
    func classifies(status: Int, headers: [String: String], body: String, expected: Disposition) {
        let r = WebPushProvider.classify(.success(HTTPResponse(status: status, headers: headers, body: Array(body.utf8))), now: Self.now)
        #expect(r.disposition == expected)
        #expect(r.code == String(status))
        if !body.isEmpty { #expect(r.reason == body) }
    }

    @Test func deliveredKeepsTheLocationAsProviderID() {
        let r = WebPushProvider.classify(.success(HTTPResponse(status: 201, headers: ["location": "https://fcm.googleapis.com/m/1"])))
        #expect(r == ProviderResult(.delivered, code: "201", providerID: "https://fcm.googleapis.com/m/1"))
        let gone = WebPushProvider.classify(.success(HTTPResponse(status: 410)))
        #expect(gone.reason == "subscription gone")
    }

    /// The service's text becomes one line: line and paragraph separators (U+2028, U+2029), other
    /// controls and bidi overrides included, as everywhere text is shown on one line.
    @Test func theServicesTextIsOneLine() {
        let body = "bad\nkey\u{2028}for\u{2029}this\u{202E}origin\u{1B}[2J"
        let r = WebPushProvider.classify(.success(HTTPResponse(status: 400, body: Array(body.utf8))))
        #expect(r.reason == "bad key for this origin [2J")
        #expect(r.reason?.unicodeScalars.contains { TerminalText.mustEscape($0) } == false)
    }

    @Test func transportErrorsRetryUnlessPermanent() {
        #expect(WebPushProvider.classify(.failure(HTTPTransportError("reset"))).disposition == .retry(after: nil))
        #expect(WebPushProvider.classify(.failure(HTTPTransportError("tls", isPermanent: true))).disposition == .rejected)
    }

    @Test func requestCarriesTheRFC8030Headers() {
        let n = WebPushNotification(payload: Array("{}".utf8), ttlSeconds: 60, urgency: "high", topic: "news")
        let r = WebPushProvider.request(endpoint: "https://fcm.googleapis.com/fcm/send/x", authorization: "vapid t=a.b.c, k=K",
                                        notification: n, body: [1, 2, 3])
        #expect(r.method == "POST" && r.url == "https://fcm.googleapis.com/fcm/send/x" && r.body == [1, 2, 3])
        #expect(r.headers.map { "\($0.0): \($0.1)" } == ["Authorization: vapid t=a.b.c, k=K", "Content-Encoding: aes128gcm",
                                                          "Content-Type: application/octet-stream", "TTL: 60", "Urgency: high", "Topic: news"])
    }

    @Test(arguments: [
        ("https://fcm.googleapis.com/fcm/send/abc", nil),
        ("https://updates.push.services.mozilla.com/wpush/v2/x", nil),
        ("https://web.push.apple.com/QGx", nil),
        ("https://wns2-par02p.notify.windows.com/w/?token=x", nil),
        ("https://FCM.googleapis.com./x", nil),
        ("https://fcm.googleapis.com.evil.example/x", "endpoint host fcm.googleapis.com.evil.example is not in allowed_hosts"),
        ("https://evilpush.apple.com/x", "endpoint host evilpush.apple.com is not in allowed_hosts"),
        ("https://169.254.169.254/latest", "endpoint host 169.254.169.254 is not in allowed_hosts"),
        ("http://fcm.googleapis.com/x", "endpoint is not https"),
        ("https://user@fcm.googleapis.com/x", "endpoint has an unusable host part"),
        ("https://fcm.googleapis.com:443/x", nil),
        ("https://fcm.googleapis.com:8443/x", "endpoint host fcm.googleapis.com is allowed on port 443 only, not 8443"),
        ("https://web.push.apple.com.:444/x", "endpoint host web.push.apple.com is allowed on port 443 only, not 444"),
        ("https://localhost./x", "endpoint host localhost is not in allowed_hosts"),
        ("https://fcm.googleapis.cöm/x", "endpoint host fcm.googleapis.xn--cm-fka is not in allowed_hosts"),
        ("https://xn--zz.googleapis.com/x", "endpoint host is not a valid internationalised host name (IDNA: string contains invalid punycode data)"),
        ("https://XN--FCM-X.googleapis.com/x", "endpoint host is not a valid internationalised host name (IDNA: string contains invalid punycode data)"),
        ("https://fcm.googleapis.com:0/x", "endpoint has an unusable port"),
    ] as [(String, String?)])
    func endpointAllowList(endpoint: String, denial: String?) {
        #expect(WebPushEndpointPolicy(allowedHosts: WebPushConfig.defaultAllowedHosts).denial(endpoint) == denial)
    }

    @Test func subjectMustBeMailtoOrHTTPS() {
        #expect(WebPushSetup.subjectProblem("mailto:ops@example.com") == nil)
        #expect(WebPushSetup.subjectProblem("https://example.com/contact") == nil)
        #expect(WebPushSetup.subjectProblem("ops@example.com") != nil)
        #expect(WebPushSetup.subjectProblem("http://example.com") != nil)
    }
}
