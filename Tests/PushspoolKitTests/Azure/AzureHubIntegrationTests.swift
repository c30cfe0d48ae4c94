import Foundation
import PushspoolHTTP
import Testing

/// The real `pushspool` binary against the fake hub (Tests/Fakes/azurehub.js, HTTPS, Node
/// built-ins): jobs dropped in `<spool>/incoming/`, `pushspool run --once`, then assertions on
/// what the hub received and on `<spool>/results/<id>.jsonl` (README "Result log").
@Suite(.enabled(if: Paths.nodeAvailable), .serialized) struct AzureHubIntegrationTests {
    static let key = "hub-key+/=="
    static let toast = #"<toast><visual><binding template="ToastText01"><text id="1">From bob: hi</text></binding></visual></toast>"#
    static let tutorialJob = #"{"to_tag": "username:alice", "pns": ["wns", "gcm", "apns"], "from": "bob", "message": "hi"}"#

    /// A spool, a config routing every platform to the hub, and a fake hub.
    final class Bench {
        let dir = TempDir("azure-int")
        let hub: FakeServer
        var key: String
        var spool: String { dir.path("spool") }

        init(fakeArgs: [String: String] = [:], key: String = AzureHubIntegrationTests.key,
             routes: String = #"{"apns": "azure", "fcm": "azure", "wns": "azure"}"#, azureExtra: String = "",
             otherProviders: String = "") throws {
            self.key = key
            hub = try FakeServer("azurehub", args: ["key": AzureHubIntegrationTests.key].merging(fakeArgs) { $1 }, dir: dir)
            dir.write("pushspool.json", """
                {"spool": "spool", "routes": \(routes),
                 "retry": {"max_attempts": 3, "base_delay_ms": 10, "max_delay_ms": 2000},
                 "providers": {"azure": {"connection_string": "env:NH_CONNECTION_STRING", "hub": "myhub"\(azureExtra)}\(otherProviders)},
                 "tls": {"ca_file": "\(Paths.fixture("ca.pem").path)"}}
                """)
            try initSpool(["--spool", spool, "--config", dir.path("pushspool.json")])
        }

        var connectionString: String {
            "Endpoint=sb://127.0.0.1:\(hub.port)/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=\(key)"
        }

        func drop(_ id: String, _ job: String) { dir.write("spool/incoming/\(id).json", job) }

        @discardableResult
        func run(_ args: [String] = ["run", "--once"]) throws -> RunResult {
            try runPushspool(args + ["--spool", spool, "--config", dir.path("pushspool.json")],
                             // Debug logging on, so the no-secrets checks cover every log line.
                             cwd: dir.url, env: ["NH_CONNECTION_STRING": connectionString, "PUSHSPOOL_DEBUG": "1"])
        }

        func results(_ id: String) -> [[String: Any]] { dir.jsonLines("spool/results/\(id).jsonl") }
        func deliveries(_ id: String) -> [[String: Any]] { results(id).filter { $0["type"] as? String == "delivery" } }
        func summary(_ id: String) -> [String: Any] { results(id).last { $0["type"] as? String == "summary" } ?? [:] }
        var requests: [[String: Any]] { hub.state()["requests"] as? [[String: Any]] ?? [] }
        var statuses: [Int] { requests.compactMap { $0["status"] as? Int } }

        /// Credentials must never reach result logs or the log output.
        func expectNoSecrets(_ id: String, _ r: RunResult) {
            let text = (dir.read("spool/results/\(id).jsonl") ?? "") + r.stdout + r.stderr
            #expect(!text.contains("SharedAccessSignature"))
            #expect(!text.contains("sig="))
            #expect(!text.contains(key))
        }
    }

    @Test func tutorialCaseThroughTheHub() throws {
        let b = try Bench(azureExtra: #", "fcm_format": "gcm""#)
        b.drop("tutorial", AzureHubIntegrationTests.tutorialJob)
        let r = try b.run()
        #expect(r.status == 0, "\(r.stderr)")
        let requests = b.requests
        // One request per platform, in the job's order, each carrying the tutorial's payload.
        #expect(requests.count == 3)
        #expect(Set(requests.compactMap { $0["format"] as? String }) == ["windows", "gcm", "apple"])
        let byFormat = Dictionary(requests.map { ($0["format"] as? String ?? "", $0) }) { a, _ in a }
        #expect(byFormat["windows"]?["body"] as? String == Self.toast)
        #expect(byFormat["gcm"]?["body"] as? String == #"{"data":{"message":"From bob: hi"}}"#)
        #expect(byFormat["apple"]?["body"] as? String == #"{"aps":{"alert":"From bob: hi"}}"#)
        #expect(requests.allSatisfy { $0["tags"] as? String == "username:alice" })
        #expect(byFormat["windows"]?["wnsType"] as? String == "wns/toast")
        #expect((b.hub.state()["sasTokens"] as? [Any])?.count == 1)

        let deliveries = b.deliveries("tutorial")
        #expect(deliveries.count == 3)
        for d in deliveries {
            #expect(d["provider"] as? String == "azure")
            #expect(d["status"] as? String == "delivered")
            #expect(d["tags"] as? String == "username:alice")
            #expect(d["code"] as? String == "201")
        }
        let ids = Set(requests.compactMap { $0["notificationId"] as? String })
        #expect(Set(deliveries.compactMap { $0["provider_id"] as? String }) == ids)
        #expect(Set(deliveries.compactMap { $0["platform"] as? String }) == ["wns", "fcm", "apns"])
        #expect(b.summary("tutorial")["status"] as? String == "done")
        #expect(b.summary("tutorial")["delivered"] as? Int == 3)
        b.expectNoSecrets("tutorial", r)
    }

    @Test func expressionIsSentAsWrittenAndFcmV1IsTheDefault() throws {
        let b = try Bench()
        let expression = "(follows_RedSox || follows_Cardinals) && location_Boston"
        b.drop("expr", #"{"tags": "\#(expression)", "pns": "fcm", "message": "Game on"}"#)
        let r = try b.run()
        #expect(r.status == 0, "\(r.stderr)")
        let req = try #require(b.requests.first)
        #expect(b.requests.count == 1)
        #expect(req["tags"] as? String == expression)
        #expect(req["format"] as? String == "fcmV1")
        #expect(req["apiVersion"] as? String == "2015-01")
        #expect(req["body"] as? String == #"{"message":{"data":{"message":"Game on"}}}"#)
        #expect(b.deliveries("expr").first?["tags"] as? String == expression)
    }

    @Test func broadcastSendsNoTagsHeader() throws {
        let b = try Bench()
        b.drop("all", #"{"broadcast": true, "pns": ["apns"], "message": "hello all"}"#)
        let r = try b.run()
        #expect(r.status == 0, "\(r.stderr)")
        #expect(b.requests.count == 1)
        #expect(b.requests.first?["tags"] is NSNull)
        #expect(b.deliveries("all").first?["status"] as? String == "delivered")
    }

    @Test func anExpressionBeyondTheHubLimitsFailsBeforeSending() throws {
        let b = try Bench()
        b.drop("wide", #"{"tags": "a && b && c && d && e && f && g", "pns": ["apns"], "message": "m"}"#)
        let r = try b.run()
        #expect(b.requests.isEmpty)
        let summary = b.summary("wide")
        #expect(summary["status"] as? String == "failed", "\(r.stderr)")
        #expect((summary["error"] as? String)?.contains("at most 6") == true)
    }

    @Test func aWrongKeyGets401AndIsRetriedOnceThenFails() throws {
        let b = try Bench(key: "wrong-key")
        b.drop("badsig", #"{"to_tag": "username:alice", "pns": ["apns"], "message": "m"}"#)
        let r = try b.run()
        // 401 → renew the SAS and retry once → 401 again: wrong key, fail (and pause the route).
        #expect(b.statuses == [401, 401], "\(r.stderr)")
        #expect(b.hub.state()["sasFailures"] as? [String] == ["signature mismatch", "signature mismatch"])
        let d = try #require(b.deliveries("badsig").first)
        #expect(d["status"] as? String == "failed")
        #expect(d["code"] as? String == "401")
        b.expectNoSecrets("badsig", r)
    }

    @Test func quotaIsRetriedAfterRetryAfterThenDelivered() throws {
        let b = try Bench(fakeArgs: ["quota": "1"])
        b.drop("quota", #"{"to_tag": "username:alice", "pns": ["wns"], "message": "m"}"#)
        let r = try b.run()
        #expect(b.statuses == [403, 201], "\(r.stderr)")
        // Retry-After: 1 was honoured (a lower bound only: slowness cannot make this fail).
        let at = b.requests.compactMap { ($0["at"] as? NSNumber)?.doubleValue }
        #expect(at.count == 2 && at[1] - at[0] >= 950)
        let d = try #require(b.deliveries("quota").first)
        #expect(d["status"] as? String == "delivered")
        #expect(d["attempts"] as? Int == 2)
    }

    @Test(arguments: [429, 503])
    func throttlingAndServerErrorsAreRetried(_ status: Int) throws {
        let b = try Bench(fakeArgs: ["fail": "\(status):1"])
        b.drop("busy", #"{"to_tag": "username:alice", "pns": ["fcm"], "message": "m"}"#)
        let r = try b.run()
        #expect(b.statuses == [status, 201], "\(r.stderr)")
        let d = try #require(b.deliveries("busy").first)
        #expect(d["status"] as? String == "delivered")
        #expect(d["attempts"] as? Int == 2)
    }

    @Test func tooLargeForTheHubFailsWithoutRetry() throws {
        let b = try Bench(fakeArgs: ["max-entity": "64"])
        b.drop("big", #"{"to_tag": "username:alice", "pns": ["apns"], "message": "\#(String(repeating: "x", count: 80))"}"#)
        let r = try b.run()
        #expect(b.statuses == [413], "\(r.stderr)")
        let d = try #require(b.deliveries("big").first)
        #expect(d["status"] as? String == "failed")
        #expect(d["code"] as? String == "413")
        #expect((d["reason"] as? String)?.contains("too large") == true)
        #expect(d["attempts"] as? Int == 1)
    }

    @Test func theSASIsSharedAcrossRunsAndRenewedOn401() throws {
        let b = try Bench()
        b.drop("one", #"{"to_tag": "username:alice", "pns": ["apns"], "message": "1"}"#)
        try b.run()
        b.drop("two", #"{"to_tag": "username:alice", "pns": ["apns"], "message": "2"}"#)
        try b.run()
        // A second process reused the first one's token from <spool>/.state.
        #expect((b.hub.state()["sasTokens"] as? [Any])?.count == 1)
        let state = b.dir.list("spool/.state").filter { $0.hasPrefix("azure") && $0.hasSuffix(".json") }
        #expect(state.count == 1)
        // Make the cached token stale (signed with another key) while it still looks fresh.
        let file = "spool/.state/\(try #require(state.first))"
        let cached = try #require(b.dir.read(file))
        let stale = cached.replacingOccurrences(of: #"sig=[^&"]*"#, with: "sig=AAAA", options: .regularExpression)
        #expect(stale != cached)
        b.dir.write(file, stale)
        b.drop("three", #"{"to_tag": "username:alice", "pns": ["apns"], "message": "3"}"#)
        let r = try b.run()
        #expect(b.statuses == [201, 201, 401, 201], "\(r.stderr)")
        let d = try #require(b.deliveries("three").first)
        #expect(d["status"] as? String == "delivered")
        #expect(d["attempts"] as? Int == 2)
    }

    @Test func mixedRoutesDirectApnsAndHubForFcmAndWns() throws {
        // apns goes direct (local registry + the APNs provider, against the fake APNs); fcm and
        // wns go through the hub, which resolves the tag itself.
        let holder = TempDir("azure-mixed-apns")
        let apns = try FakeServer("apns", dir: holder)
        let apnsConfig = """
            , "apns": {"team_id": "TEAMID1234", "key_id": "TESTKEY123", "key_file": "\(Paths.fixture("AuthKey_TESTKEY123.p8").path)",
                       "topic": "com.example.app", "endpoint": "\(apns.url)"}
            """
        let b = try Bench(routes: #"{"apns": "apns", "fcm": "azure", "wns": "azure"}"#, otherProviders: apnsConfig)
        let token = String(repeating: "ab", count: 32)
        let reg = try b.run(["register", "--platform", "apns", "--handle", token, "--tag", "username:alice", "--id", "alice-phone"])
        #expect(reg.status == 0, "\(reg.stderr)")
        b.drop("mixed", AzureHubIntegrationTests.tutorialJob)
        let r = try b.run()
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Set(b.requests.compactMap { $0["format"] as? String }) == ["windows", "fcmV1"])
        #expect(b.requests.allSatisfy { $0["tags"] as? String == "username:alice" })
        #expect(waitForIdle(apns, answered: 1)["tokensDelivered"] as? Int == 1)   // stats land when the connection closes
        let deliveries = b.deliveries("mixed")
        let byPlatform = Dictionary(deliveries.map { ($0["platform"] as? String ?? "", $0) }) { a, _ in a }
        #expect(deliveries.count == 3)
        #expect(byPlatform["apns"]?["provider"] as? String == "apns")
        #expect(byPlatform["apns"]?["device"] as? String == "alice-phone")
        #expect(byPlatform["fcm"]?["provider"] as? String == "azure")
        #expect(byPlatform["wns"]?["provider"] as? String == "azure")
        #expect(byPlatform["wns"]?["tags"] as? String == "username:alice")
        #expect(deliveries.allSatisfy { $0["status"] as? String == "delivered" })
        b.expectNoSecrets("mixed", r)
    }

    @Test func configCheckListsEveryAzureProblemWithoutTheKey() throws {
        // (fcm_format is checked by the config loader, before providers are set up.)
        let b = try Bench()
        b.dir.write("pushspool.json", (b.dir.read("pushspool.json") ?? "").replacingOccurrences(of: #""hub": "myhub""#, with: #""hub": "bad hub""#))
        let r = try runPushspool(["config", "--check", "--config", b.dir.path("pushspool.json")], cwd: b.dir.url,
                                 env: ["NH_CONNECTION_STRING": "Endpoint=ftp://x/;SharedAccessKey=SECRET-KEY"])
        #expect(r.status == 78)
        let out = r.stdout + r.stderr
        #expect(out.contains("providers.azure.hub"))
        #expect(out.contains("providers.azure.connection_string: Endpoint must start with sb://"))
        #expect(out.contains("providers.azure.connection_string: missing SharedAccessKeyName"))
        #expect(!out.contains("SECRET-KEY"))
        // Several platforms route to the hub: each problem is still listed once.
        #expect(out.components(separatedBy: "missing SharedAccessKeyName").count == 2, "\(out)")
    }
}
