import Foundation
import Testing

/// The real binary against the fake FCM (token endpoint + v1 send), which verifies the RS256
/// assertion, the bearer token, string-only data and sizes.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct FCMIntegrationTests {
    @Test func perTokenOutcomesResultLogAndRegistry() throws {
        let h = try PushCloudHarness(fcmArgs: [:])
        let tokens = ["ok-1", "ok-2", "gone-1", "invalid-1", "mismatch-1", "quota-1", "flaky-1"]
        try h.register(tokens.map { ("a-\($0)", $0 == "ok-2" ? "gcm" : "fcm", $0) })
        try h.submit("notify-alice", """
            {"to_tag": "username:alice", "pns": ["gcm"], "from": "bob", "message": "hi", "title": "Note",
             "data": {"k": "v"}, "ttl_seconds": 60, "priority": "high", "collapse_id": "c1"}
            """)
        let run = try h.runOnce()
        #expect(run.status == 0, "\(run.stderr)")

        let d = h.deliveries("notify-alice")
        let expected = ["ok-1": "delivered", "ok-2": "delivered", "quota-1": "delivered", "flaky-1": "delivered",
                        "gone-1": "unregistered", "invalid-1": "unregistered", "mismatch-1": "failed"]
        for (token, status) in expected { #expect(d["a-\(token)"]?.str("status") == status, "\(token)") }
        #expect(d["a-ok-1"]?.str("provider_id")?.hasPrefix("projects/pushspool-test/messages/") == true)
        #expect(d["a-gone-1"]?.str("reason") == "UNREGISTERED")
        #expect(d["a-gone-1"]?.str("code") == "404")
        #expect(d["a-mismatch-1"]?.str("reason") == "SENDER_ID_MISMATCH")
        #expect(d["a-quota-1"]?.int("attempts") == 2)
        #expect(d["a-flaky-1"]?.int("attempts") == 2)
        #expect(h.summary("notify-alice")?.int("retries") == 2)
        // Another project's token is an app-level refusal: the device is kept (§ Several apps).
        #expect(try h.registeredIDs() == ["a-ok-1", "a-ok-2", "a-quota-1", "a-flaky-1", "a-mismatch-1"])

        let s = try #require(h.fcm).state()
        #expect(s.int("tokenRequests") == 1)
        #expect(s.int("badGrants") == 0)
        #expect((s.list("problems") ?? ["?"]).isEmpty, "\(s["problems"] ?? "")")
        #expect(s.int("duplicateDeliveries") == 0)
        let per = try #require(s.dict("perToken"))
        for token in ["ok-1", "ok-2", "gone-1", "invalid-1", "mismatch-1"] { #expect(per.dict(token)?.int("attempts") == 1, "\(token)") }
        // 429 carried Retry-After: 1; the second attempt waited for it.
        let times = (per.dict("quota-1")?.list("times") as? [Double]) ?? []
        #expect(times.count == 2)
        #expect((times.last ?? 0) - (times.first ?? 0) >= 0.9)
        // The message as FCM received it: string data with the text first, mapped options.
        let message = try #require(per.dict("ok-1")?.dict("message"))
        #expect(message.dict("data") as? [String: String] == ["message": "From bob: hi", "k": "v"])
        #expect(message.dict("notification") as? [String: String] == ["title": "Note", "body": "From bob: hi"])
        #expect(message.dict("android") as? [String: String] == ["priority": "HIGH", "ttl": "60s", "collapse_key": "c1"])
    }

    @Test func manyConcurrentSendsShareOneTokenAndRefreshItOnceWhenExpired() throws {
        let h = try PushCloudHarness(fcmArgs: ["expire-first-token": "1"])
        let count = 300
        try h.register((0..<count).map { ("dev-\($0)", "fcm", "ok-\($0)") })
        try h.runOnce("burst", #"{"to_tag": "username:alice", "pns": "fcm", "message": "hi"}"#)
        #expect(h.summary("burst")?.int("delivered") == count)
        let s = try #require(h.fcm).state()
        // One grant for the first token (refused as expired by every send), one for its replacement.
        #expect(s.int("tokenRequests") == 2)
        #expect((s.int("authFailures") ?? 0) >= 1)
        #expect(s.int("delivered") == count)
        #expect(s.int("duplicateDeliveries") == 0)
    }

    @Test func accessTokenIsReusedByTheNextProcessAndNeverShown() throws {
        let h = try PushCloudHarness(fcmArgs: [:])
        try h.register([("a-1", "fcm", "ok-1")])
        try h.submit("first", #"{"to_tag": "username:alice", "pns": "fcm", "message": "one"}"#)
        let r1 = try h.runOnce()
        try h.submit("second", #"{"to_tag": "username:alice", "pns": "fcm", "message": "two"}"#)
        let r2 = try h.runOnce()
        #expect(h.summary("first")?.int("delivered") == 1)
        #expect(h.summary("second")?.int("delivered") == 1)
        let s = try #require(h.fcm).state()
        #expect(s.int("tokenRequests") == 1)
        #expect(s.dict("perToken")?.dict("ok-1")?.int("attempts") == 2)

        let stateFiles = h.dir.list("spool/.state").filter { $0.hasSuffix(".json") }
        #expect(stateFiles.count == 1)
        let attrs = try FileManager.default.attributesOfItem(atPath: h.dir.path("spool/.state/\(stateFiles.first ?? "")"))
        #expect((attrs[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(!h.visibleText([r1, r2]).contains("ya29."))
    }

    @Test func refusedGrantFailsTargetsAndKeepsDevices() throws {
        let h = try PushCloudHarness(fcmArgs: ["token-status": "400"])
        try h.register([("a-1", "fcm", "ok-1"), ("a-2", "fcm", "ok-2")])
        try h.submit("refused", #"{"to_tag": "username:alice", "pns": "fcm", "message": "hi"}"#)
        let run = try h.runOnce()
        let d = h.deliveries("refused")
        #expect(d.count == 2)
        #expect(d.values.allSatisfy { $0.str("status") == "failed" })
        #expect(d["a-1"]?.str("reason")?.contains("invalid_grant") == true)
        #expect(try h.registeredIDs() == ["a-1", "a-2"])
        #expect(try #require(h.fcm).state().int("sends") == 0)
        #expect(!h.visibleText([run]).contains("PRIVATE KEY"))
    }

    @Test func brokenServiceAccountIsAConfigurationErrorListingEveryProblem() throws {
        let h = try PushCloudHarness(fcmArgs: [:])
        h.dir.write("service-account.json", #"{"type": "service_account", "project_id": "p", "private_key": "nope"}"#)
        let r = try h.runOnce()
        #expect(r.status == 78)
        #expect(r.stderr.contains("field \"client_email\" is missing"))
        #expect(r.stderr.contains("private_key does not parse"))
    }
}
