import Foundation
import Testing

/// Microsoft's "Secure Push" tutorial clients against `serve` + `run` + the fake APNs, FCM and WNS,
/// request for request: a secure job sends each of alice's devices only an id; each device fetches
/// `GET /api/notifications/{id}` exactly as its client writes the request, and gets the text it
/// would have shown, in its language, with `Read` turning true. bob gets the one `404` for
/// alice's ids, and so do 10,000 forged, unknown and foreign ids, byte for byte.
///
/// The tutorial's clients read only `Payload`. Two of them also assume its sample backend's
/// `int` ids (a counter): the iOS client takes `[secureId intValue]` and formats it with `%d`,
/// the Windows one deserializes `Id` into an `int`. An id that must be unguessable (128 bits and
/// more) cannot be such a number, so those two need one line changed (keep the id a string); the
/// requests below are theirs with the id as the push carried it. The Android client works as is.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct SecurePushReplayTests {
    static let iPhoneToken = String(repeating: "7b2e", count: 16)
    static let english = "Your balance is 12 EUR"
    static let french = "Votre solde est de 12 EUR"
    static let german = "Ihr Kontostand beträgt 12 EUR"

    /// alice: an iPhone (English), an Android phone (French), a Windows PC (German); bob: an
    /// Android phone. One secure job to all, sent by `run --once`; serve running beside it.
    final class Setup {
        let h: PushCloudHarness
        let serve: ServeProcess
        /// The ids each device got, as its service delivered them.
        let iPhoneID: String, androidID: String, windowsID: String, bobID: String

        init(job: String = SecurePushReplayTests.job) throws {
            h = try PushCloudHarness(fcmArgs: [:], wnsArgs: [:], apnsArgs: [:])
            FrontDoorFiles.write(into: h.dir)
            let config = h.dir.read("pushspool.json") ?? ""
            // Fuzzing-grade request counts from one user: no throttling for this test.
            h.dir.write("pushspool.json", "{" + FrontDoorFiles.section(#", "rate_limit_per_minute": 1000000"#) + ","
                        + config.drop { $0 != "{" }.dropFirst())
            let wns = try #require(h.wns)
            let channel = "\(wns.url)/ch/ok-win?token=x"
            let devices = [
                #"{"id": "a-iphone", "platform": "apns", "handle": "\#(SecurePushReplayTests.iPhoneToken)", "tags": ["username:alice", "customers"], "lang": "en-US"}"#,
                #"{"id": "a-android", "platform": "fcm", "handle": "ok-android", "tags": ["username:alice", "customers"], "lang": "fr-CA"}"#,
                #"{"id": "a-windows", "platform": "wns", "handle": "\#(channel)", "tags": ["username:alice", "customers"], "lang": "de-DE"}"#,
                #"{"id": "b-android", "platform": "fcm", "handle": "ok-bob", "tags": ["username:bob", "customers"]}"#,
            ]
            h.dir.write("devices.jsonl", devices.joined(separator: "\n") + "\n")
            let imported = try h.cli(["import", h.dir.path("devices.jsonl")])
            #expect(imported.status == 0, "\(imported.stderr)")
            serve = try ServeProcess(config: h.configPath, cwd: h.dir.url, env: ["TEST_WNS_SECRET": PushCloudHarness.clientSecret])
            // The bank's backend drops the job through the job API.
            let a = try serve.client().request("POST", "/v1/jobs", headers: [("Authorization", FrontDoorFiles.bearer)], body: job)
            #expect(a.status == 202, "\(a.text)")
            let run = try h.runOnce()
            #expect(run.status == 0, "\(run.stderr)")
            let apns = try #require(h.apns).state()
            let fcm = try #require(h.fcm).state()
            let win = try wns.state()
            iPhoneID = try #require(apns.dict("lastHeaders")?.dict(SecurePushReplayTests.iPhoneToken)?.dict("payload")?.str("secureId"), "\(apns)")
            androidID = try #require(fcm.dict("perToken")?.dict("ok-android")?.dict("message")?.dict("data")?.str("secureId"), "\(fcm)")
            bobID = try #require(fcm.dict("perToken")?.dict("ok-bob")?.dict("message")?.dict("data")?.str("secureId"), "\(fcm)")
            windowsID = try #require(win.dict("perChannel")?.dict("ok-win")?.str("raw"), "\(win)")
            #expect(win.dict("perChannel")?.dict("ok-win")?.str("type") == "wns/raw")
        }

        var port: Int { serve.port }
    }

    static let job = """
        {"id": "statement-1", "tags": "customers", "pns": ["apns", "fcm", "wns"], "from": "bank", "message": "\(english)", "secure": true,
         "localized": {"fr": {"message": "\(french)"}, "de": {"message": "\(german)"}}}
        """

    /// NSURLSession's GET as CFNetwork writes it (the tutorial's `retrieveSecurePayloadWithId`).
    static func iOS(_ id: String, port: Int, user: String) -> String {
        "GET /api/notifications/\(id) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: */*\r\nAuthorization: \(FrontDoorFiles.basic(user))\r\n"
            + "Accept-Language: en-US,en;q=0.9\r\nAccept-Encoding: gzip, deflate\r\n"
            + "User-Agent: NotifyUsers/1 CFNetwork/1408.0.4 Darwin/22.5.0\r\nConnection: keep-alive\r\n\r\n"
    }

    /// Android's `DefaultHttpClient` executing `new HttpGet(…)` with the one header the tutorial adds
    /// (its interceptors then add Host, Connection and User-Agent, in that order).
    static func android(_ id: String, port: Int, user: String) -> String {
        "GET /api/notifications/\(id) HTTP/1.1\r\nAuthorization: \(FrontDoorFiles.basic(user))\r\nHost: 127.0.0.1:\(port)\r\n"
            + "Connection: Keep-Alive\r\nUser-Agent: Apache-HttpClient/UNAVAILABLE (java 1.4)\r\n\r\n"
    }

    /// `HttpClient.GetStringAsync` with `DefaultRequestHeaders.Authorization` (the Windows background task).
    static func windows(_ id: String, port: Int, user: String) -> String {
        "GET /api/notifications/\(id) HTTP/1.1\r\nAuthorization: \(FrontDoorFiles.basic(user))\r\nHost: 127.0.0.1:\(port)\r\nConnection: Keep-Alive\r\n\r\n"
    }

    static func send(_ request: String, port: Int) throws -> RawHTTPClient.Answer {
        let c = try RawHTTPClient(port: port)
        try c.send(request)
        return try c.answer()
    }

    @Test func theTutorialsClientsFetchTheirTextInTheirLanguage() throws {
        let s = try Setup()
        let cases: [(String, (String, Int, String) -> String, String)] = [
            (s.iPhoneID, Self.iOS, "From bank: \(Self.english)"), (s.androidID, Self.android, "From bank: \(Self.french)"),
            (s.windowsID, Self.windows, "From bank: \(Self.german)"),
        ]
        for (id, request, text) in cases {
            for read in [false, true] {
                let a = try Self.send(request(id, s.port, "alice"), port: s.port)
                #expect(a.status == 200, "\(a.text)")
                // What each client reads: a JSON object with Payload (and the tutorial's Id and Read).
                let body = try #require(a.json as? [String: Any], "\(a.text)")
                #expect(body["Payload"] as? String == text && body["Id"] as? String == id && body["Read"] as? Bool == read, "\(a.text)")
                #expect(a.text.hasPrefix(#"{"Id":"#) && a.header("Cache-Control") == "no-store")
            }
        }
        // bob's own notification is his, in the job's own language.
        var a = try Self.send(Self.android(s.bobID, port: s.port, user: "bob"), port: s.port)
        #expect((a.json as? [String: Any])?["Payload"] as? String == "From bank: \(Self.english)", "\(a.text)")

        // The full shape, for a service (the bank's backend) too.
        a = try s.serve.client().request("GET", "/v1/notifications/\(s.androidID)", headers: [("Authorization", FrontDoorFiles.bearer)])
        let full = try #require(a.json as? [String: Any], "\(a.text)")
        #expect(full["message"] as? String == "From bank: \(Self.french)" && full["job"] as? String == "statement-1" && full["platform"] as? String == "fcm")

        // alice opens the one on her phone; a second report of it counts once.
        let c = try s.serve.client()
        for _ in 0..<2 {
            a = try c.request("POST", "/api/notifications/\(s.androidID)/events", headers: [("Authorization", FrontDoorFiles.basic("alice"))],
                              body: #"{"type":"opened"}"#)
            #expect(a.status == 200, "\(a.text)")
        }
        // The bank's backend forwards what its SDK saw: the iPhone's open counts, the Windows
        // receipt was counted by the fetch, an id never sent is not found, an `at` from before the
        // job is refused; one status each, in order.
        let future = "2999-01-01T00:00:00Z"
        // An id never sent: the iPhone's with another ending (both endings keep the id canonical;
        // the one that differs from the real id's, which ends in `AA` once in 4,096 runs).
        let neverSent = String(s.iPhoneID.dropLast(2)) + (s.iPhoneID.hasSuffix("AA") ? "AQ" : "AA")
        a = try c.request("POST", "/v1/events", headers: [("Authorization", FrontDoorFiles.bearer)], body: """
            [{"id":"\(s.iPhoneID)","type":"opened"},{"id":"\(s.windowsID)","type":"received"},
             {"id":"\(neverSent)","type":"opened"},{"id":"\(s.windowsID)","type":"dismissed","at":"2020-01-01T00:00:00Z"},
             {"id":"\(s.windowsID)","type":"opened","at":"\(future)"}]
            """)
        let statuses = (a.json as? [[String: String]])?.map { $0["status"] ?? "" }
        #expect(a.status == 200 && statuses == ["recorded", "duplicate", "not_found", "invalid", "invalid"], "\(a.text)")
        // The funnel: 4 targets, 4 sent and delivered, 4 fetched (received), 2 opened.
        a = try c.request("GET", "/v1/jobs/statement-1", headers: [("Authorization", FrontDoorFiles.bearer)])
        let funnel = try #require((a.json as? [String: Any])?["funnel"] as? [String: Any], "\(a.text)")
        #expect([funnel.int("targets"), funnel.int("sent"), funnel.int("delivered"), funnel.int("received"), funnel.int("opened")] == [4, 4, 4, 4, 2],
                "\(funnel)")
        #expect(funnel.dict("by_platform")?.dict("fcm")?.int("opened") == 1 && funnel.dict("by_platform")?.dict("apns")?.int("opened") == 1
                && funnel.dict("by_app")?.dict("default")?.int("received") == 4, "\(funnel)")
        a = try c.request("GET", "/metrics", headers: [("Authorization", FrontDoorFiles.bearer)])
        #expect(a.text.contains(#"pushspool_notification_events_total{app="default",platform="fcm",type="received"} 2"#), "\(a.text)")
        #expect(a.text.contains(#"pushspool_notification_events_total{app="default",platform="fcm",type="opened"} 1"#), "\(a.text)")

        // The text went to the devices through serve alone: not in its log, the metrics, or the job's status.
        for secret in [Self.english, Self.french, Self.german] {
            #expect(!s.serve.log.contains(secret) && !a.text.contains(secret))
        }
        a = try c.request("GET", "/v1/jobs/statement-1", headers: [("Authorization", FrontDoorFiles.bearer)])
        #expect(!a.text.contains("balance") && !a.text.contains("solde"), "\(a.text)")
    }

    @Test func anotherUsersNotificationIsNotFoundForReadingOrReporting() throws {
        let s = try Setup()
        let bob = [("Authorization", FrontDoorFiles.basic("bob"))]
        let c = try s.serve.client()
        var answers: Set<String> = []
        for id in [s.iPhoneID, s.androidID, s.windowsID] {
            var a = try Self.send(Self.android(id, port: s.port, user: "bob"), port: s.port)
            #expect(a.status == 404, "\(a.text)")
            answers.insert(a.text)
            a = try c.request("GET", "/v1/notifications/\(id)", headers: bob)
            answers.insert("\(a.status) \(a.text)")
            a = try c.request("POST", "/api/notifications/\(id)/events", headers: bob, body: #"{"type":"opened"}"#)
            answers.insert("\(a.status) \(a.text)")
        }
        #expect(answers == [#"{"error":"id: no notification of yours has this id"}"#, #"404 {"error":"id: no notification of yours has this id"}"#], "\(answers)")
        // Nothing was counted for bob's tries: alice's notifications are still unread and unreceived.
        let a = try c.request("GET", "/v1/jobs/statement-1", headers: [("Authorization", FrontDoorFiles.bearer)])
        let funnel = try #require((a.json as? [String: Any])?["funnel"] as? [String: Any], "\(a.text)")
        #expect(funnel.int("received") == 0 && funnel.int("opened") == 0, "\(funnel)")
        let first = try Self.send(Self.iOS(s.iPhoneID, port: s.port, user: "alice"), port: s.port)
        #expect((first.json as? [String: Any])?["Read"] as? Bool == false)
    }

    @Test func tenThousandForgedUnknownAndForeignIDsGetByteIdenticalAnswers() throws {
        let s = try Setup()
        let c = try s.serve.client()
        let alice = [("Authorization", FrontDoorFiles.basic("alice"))]
        // Forged: a real id with one MAC character changed; unknown: a real id's job number changed
        // (no such job) or its device's; foreign: bob's id, asked by alice.
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        func changed(_ id: String, at range: ClosedRange<Int>) -> String {
            var chars = Array(id)
            let i = Int.random(in: range, using: &rng)
            var replacement = chars[i]
            while replacement == chars[i] { replacement = alphabet.randomElement(using: &rng)! }
            chars[i] = replacement
            return String(chars)
        }
        let real = [s.iPhoneID, s.androidID, s.windowsID]
        var reference: String?
        var differing: [String] = []
        var kinds = [0, 0, 0]
        for n in 0..<10_000 {
            let base = real[n % 3]
            let id: String
            switch n % 4 {
            case 0: id = changed(base, at: 25...44); kinds[0] += 1           // the MAC's characters (the last 16 bytes)
            // Characters wholly inside one field of the layout (46 characters of base64url: version 1
            // byte, job 8, device 8, platform 1, MAC 16), never a number's sign or lowest bits, so
            // each stays an id of the right shape.
            case 1: id = changed(base, at: 3...9); kinds[1] += 1             // the job number's
            case 2: id = changed(base, at: 13...21); kinds[1] += 1           // the device key's
            default: id = s.bobID; kinds[2] += 1                             // another user's
            }
            let path = n % 2 == 0 ? "/api/notifications/\(id)" : "/v1/notifications/\(id)"
            let a = try c.request("GET", path, headers: alice)
            // Date says when, not what: every other byte must match.
            let answer = "\(a.status)\n\(NotificationRoutesTests.withoutDate(c.lastHead))\n\(a.text)"
            if reference == nil { reference = answer }
            if answer != reference, differing.count < 5 { differing.append("\(id): \(answer)") }
        }
        #expect(differing.isEmpty, "\(differing)")
        #expect(reference?.hasPrefix("404\n") == true && reference?.hasSuffix(#"{"error":"id: no notification of yours has this id"}"#) == true,
                "\(reference ?? "")")
        #expect(kinds == [2500, 5000, 2500])
        // And nothing was counted: alice's real ids are still unread.
        let a = try Self.send(Self.windows(s.windowsID, port: s.port, user: "alice"), port: s.port)
        #expect((a.json as? [String: Any])?["Read"] as? Bool == false)
    }

    @Test func anExpiredIDIsGoneWithItsContent() throws {
        let job = """
            {"id": "otp-1", "tags": "customers", "pns": ["apns", "fcm", "wns"], "message": "code 424242", "secure": true, "secure_ttl_seconds": 1}
            """
        let s = try Setup(job: job)
        Thread.sleep(forTimeInterval: 2.1)
        let a = try Self.send(Self.android(s.androidID, port: s.port, user: "alice"), port: s.port)
        #expect(a.status == 410 && a.text == #"{"error":"id: this notification's content has expired and was erased"}"#, "\(a.text)")
    }
}
