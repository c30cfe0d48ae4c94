import Foundation
import PushspoolCore
import Testing
@testable import PushspoolKit

/// The provider through the real libcurl transport against the fake APNs, which verifies the
/// ES256 signature, kid/iss/iat, topic, push type, priority, token format and payload size.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct APNsProviderFakeTests {
    static func token(_ prefix: String, _ n: Int = 1) -> String {
        prefix + String(format: "%060x", n)
    }

    @Test func eachScriptedAnswerMapsToItsDisposition() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", dir: dir)
        let provider = try APNsProvider(config: APNsFixtures.config(endpoint: fake.url), context: APNsFixtures.context())
        let cases: [(String, Disposition, String?)] = [
            ("0000", .delivered, nil),
            ("410e", .deviceGone(since: nil), "ExpiredToken"),
            ("400b", .deviceGone(since: nil), "BadDeviceToken"),
            ("400d", .rejected, "DeviceTokenNotForTopic (app default, topic com.example.app)"),
            ("400e", .rejected, "NewAppleReason"),
            ("429a", .retry(after: nil), "TooManyRequests"),
            ("503c", .reconnect, "Shutdown"),
        ]
        for (prefix, expected, reason) in cases {
            let r = APNsFixtures.send(provider, to: APNsFixtures.device(Self.token(prefix)))
            #expect(r.disposition == expected, "\(prefix)")
            #expect(r.reason == reason, "\(prefix)")
            #expect(r.providerID == APNsProvider.apnsID(jobID: "job1", deviceID: "dev-" + Self.token(prefix).prefix(8)))
        }
        let gone = APNsFixtures.send(provider, to: APNsFixtures.device(Self.token("410a")))
        guard case .deviceGone(let since?) = gone.disposition else { Issue.record("410 without timestamp"); return }
        #expect(abs(since - Date().timeIntervalSince1970) < 600, "timestamp is ms since epoch, converted to seconds")
        #expect(gone.code == "410")
        provider.shutdown()

        let state = waitForIdle(fake, answered: cases.count + 1)
        #expect(state["jwts"] as? Int == 1, "one token shared by every request")
        #expect(state["badJWTs"] as? Int == 0)
        #expect(state["tlsConnections"] as? Int == 2, "503 Shutdown: the requests after it use a new connection")
        let seen = (state["lastHeaders"] as? [String: [String: Any]])?[Self.token("0000")]
        #expect(seen?["topic"] as? String == "com.example.app")
        #expect(seen?["pushType"] as? String == "alert")
        #expect(seen?["priority"] as? String == "10")
        #expect((state["problems"] as? [Any])?.isEmpty == true)
    }

    /// Apple answers 200 to a payload of the wrong shape and the device drops it; the fake
    /// answers 400 PayloadShape so that nothing of the kind passes a test unseen. pushspool's
    /// validation refuses these jobs, so they are sent here straight through the provider.
    @Test func theFakeRefusesWhatTheDeviceWouldDrop() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", dir: dir)
        let provider = try APNsProvider(config: APNsFixtures.config(endpoint: fake.url), context: APNsFixtures.context())
        let cases: [(String, String)] = [
            ("background", #"{"aps":{"content-available":1,"alert":"x"}}"#),
            ("widgets", #"{"aps":{}}"#),
            ("liveactivity", #"{"aps":{"event":"update","timestamp":1}}"#),
            ("liveactivity", #"{"aps":{"event":"start","timestamp":1,"content-state":{}}}"#),
        ]
        for (i, (type, payload)) in cases.enumerated() {
            let n = APNsNotification(payload: Array(payload.utf8), pushType: type, priority: 5)
            let r = APNsFixtures.send(provider, to: APNsFixtures.device(Self.token("0000", i + 1)), notification: n)
            #expect(r.disposition == .rejected && r.reason == "PayloadShape", "\(type) \(payload)")
        }
        let good = APNsNotification(payload: Array(#"{"aps":{"content-changed":true}}"#.utf8), pushType: "widgets")
        #expect(APNsFixtures.send(provider, to: APNsFixtures.device(Self.token("0000", 9)), notification: good).disposition == .delivered)
        provider.shutdown()
        let state = waitForIdle(fake, answered: cases.count + 1)
        #expect(state["deliveredByPushType"] as? [String: Int] == ["widgets": 1])
    }

    @Test func transientFailureThenDelivered() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", dir: dir)
        let provider = try APNsProvider(config: APNsFixtures.config(endpoint: fake.url), context: APNsFixtures.context())
        for prefix in ["503f", "500f", "429f"] {
            let device = APNsFixtures.device(Self.token(prefix))
            #expect(APNsFixtures.send(provider, to: device).disposition == .retry(after: nil))
            #expect(APNsFixtures.send(provider, to: device).disposition == .delivered)
        }
        provider.shutdown()
        let state = waitForIdle(fake, answered: 6)
        #expect(state["tokensDelivered"] as? Int == 3)
        #expect(state["duplicateDeliveries"] as? Int == 0)
    }

    @Test func expiredProviderTokenIsReplacedOnce() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", dir: dir)
        // A token this cache believes is 30 minutes old but whose iat is two hours old: Apple
        // (the fake) calls it expired; it is old enough to replace.
        let now = Date().timeIntervalSince1970
        let stale = try APNsTokenSource.sign(teamID: APNsFixtures.teamID, keyID: APNsFixtures.keyID,
                                             iat: Int64(now - 7200), key: APNsFixtures.key)
        dir.write("state/apns-TEAMID1234-TESTKEY123.json",
                  #"{"token":"\#(stale)","issued_at":\#(now - 1800),"expires_at":\#(now + 1800)}"#)
        let context = APNsFixtures.context(cacheDir: dir.url.appendingPathComponent("state"))
        let provider = try APNsProvider(config: APNsFixtures.config(endpoint: fake.url), context: context)
        let device = APNsFixtures.device(Self.token("0000"))
        let first = APNsFixtures.send(provider, to: device)
        #expect(first.disposition == .refreshCredentials)
        #expect(first.reason == "ExpiredProviderToken")
        #expect(APNsFixtures.send(provider, to: device).disposition == .delivered)
        provider.shutdown()
        let state = waitForIdle(fake, answered: 2)
        #expect(state["jwts"] as? Int == 2)
        let cached = dir.read("state/apns-TEAMID1234-TESTKEY123.json") ?? ""
        #expect(!cached.contains(stale), "the replacement is what other processes now share")
    }

    @Test(arguments: [("InvalidProviderToken", Disposition.refreshCredentials), ("BadEnvironmentKeyIdInToken", .credentialsBroken)])
    func keyErrorsBreakTheCredentials(reason: String, expected: Disposition) throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", args: ["auth-reason": reason], dir: dir)
        let provider = try APNsProvider(config: APNsFixtures.config(endpoint: fake.url), context: APNsFixtures.context())
        let r = APNsFixtures.send(provider, to: APNsFixtures.device(Self.token("0000")))
        provider.shutdown()
        #expect(r.disposition == expected)
        #expect(r.code == "403")
        #expect(r.reason == reason)
    }

    @Test func wrongTeamIsRefusedByTheFakesSignatureCheck() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", args: ["team-id": "OTHERTEAM1"], dir: dir)
        let provider = try APNsProvider(config: APNsFixtures.config(endpoint: fake.url), context: APNsFixtures.context())
        let r = APNsFixtures.send(provider, to: APNsFixtures.device(Self.token("0000")))
        provider.shutdown()
        #expect(r.disposition == .refreshCredentials)   // AUTH once; the engine pauses on the second
        #expect(r.reason == "InvalidProviderToken")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")))
    func fakeRefusesHTTP1() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", dir: dir)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = ["-s", "--http1.1", "--cacert", Paths.fixture("ca.pem").path, "-X", "POST",
                       fake.url + "/3/device/" + Self.token("0000")]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus != 0)
        let state = eventually("the fake to count the HTTP/1.1 request it refused", timeout: 10, poll: 0.05, { fake.state() },
                               until: { $0["nonH2Rejected"] as? Int == 1 })
        #expect(state["nonH2Rejected"] as? Int == 1)
        #expect(state["requests"] as? Int == 0)
    }
}
