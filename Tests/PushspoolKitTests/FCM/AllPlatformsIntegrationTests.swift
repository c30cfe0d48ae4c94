import Foundation
import Testing

/// One job to APNs, FCM (as its retired name `gcm`) and WNS: every fake gets its device in one run.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct AllPlatformsIntegrationTests {
    @Test func oneJobReachesAllThreeServices() throws {
        let h = try PushCloudHarness(fcmArgs: [:], wnsArgs: [:], apnsArgs: [:])
        let apnsToken = String(repeating: "ab", count: 32)
        try h.register([("i-apns", "apns", apnsToken), ("i-fcm", "gcm", "ok-1"),
                        ("i-wns", "wns", "\(try #require(h.wns).url)/ch/ok-1?token=x")])
        let d = try h.runOnce("everywhere", #"{"to_tag": "username:alice", "pns": ["apns", "gcm", "wns"], "from": "bob", "message": "hi"}"#)
        #expect(d["i-apns"]?.str("status") == "delivered")
        #expect(d["i-fcm"]?.str("status") == "delivered")
        #expect(d["i-wns"]?.str("status") == "delivered")
        #expect(h.summary("everywhere")?.int("delivered") == 3)
        #expect(try #require(h.fcm).state().dict("perToken")?.dict("ok-1")?.dict("message")?.dict("data") as? [String: String]
                == ["message": "From bob: hi"])
        #expect(try #require(h.wns).state().dict("perChannel")?.dict("ok-1")?.list("texts") as? [String] == ["From bob: hi"])
        // The fake writes its stats when the connection closes: wait for that, not just the exit.
        #expect(waitForIdle(try #require(h.apns), answered: 1).int("tokensDelivered") == 1)
    }

    /// Every output of a full run — run's stdout and stderr (debug, JSON), result logs, outbox,
    /// metrics, control files, `status --json`, `config --check` — holds none of the credentials
    /// used: the APNs and service-account private keys, the WNS client secret, the OAuth access
    /// tokens the services issued, the APNs JWT. (`.state/` holds the cached tokens, mode 0600.)
    @Test func noOutputHoldsACredential() throws {
        let h = try PushCloudHarness(fcmArgs: [:], wnsArgs: [:], apnsArgs: [:])
        h.dir.write("pushspool.json", (h.dir.read("pushspool.json") ?? "")
            .replacingOccurrences(of: #""concurrency": 256,"#, with: #""concurrency": 256, "metrics": {"textfile": "spool/pushspool.prom"},"#))
        try h.register([("i-apns", "apns", String(repeating: "ab", count: 32)), ("i-fcm", "gcm", "ok-1"),
                        ("i-wns", "wns", "\(try #require(h.wns).url)/ch/ok-1?token=x")])
        try h.submit("everywhere", #"{"to_tag": "username:alice", "pns": ["apns", "gcm", "wns"], "from": "bob", "message": "hi"}"#)
        try h.submit("later", #"{"to_tag": "username:alice", "pns": ["apns"], "message": "m", "not_before": "2099-01-01T00:00:00Z"}"#)
        _ = try h.cli(["pause", "later", "--spool", h.dir.path("spool")])
        let run = try h.cli(["run", "--once", "--log-format", "json", "--log-level", "debug"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(h.summary("everywhere")?.int("delivered") == 3)
        var outputs = [("run stdout", run.stdout), ("run stderr", run.stderr)]
        outputs.append(("status", try h.cli(["status", "--json"]).stdout))
        let check = try h.cli(["config", "--check"])
        outputs.append(("config --check", check.stdout + check.stderr))
        let spool = h.dir.url.appendingPathComponent("spool")
        for case let path as String in FileManager.default.enumerator(atPath: spool.path) ?? FileManager.default.enumerator(atPath: "/")!
        where !path.hasPrefix(".state") && !path.hasPrefix("registry.sqlite") {
            var isDir: ObjCBool = false
            let full = spool.appendingPathComponent(path).path
            if FileManager.default.fileExists(atPath: full, isDirectory: &isDir), !isDir.boolValue {
                outputs.append((path, (try? String(contentsOfFile: full, encoding: .utf8)) ?? ""))
            }
        }
        #expect(outputs.contains { $0.0 == "pushspool.prom" }, "the metrics file is among what is checked")
        #expect(outputs.contains { $0.0.hasPrefix("results/") })

        func pemLines(_ pem: String) -> [String] {
            pem.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("-----") && $0.count >= 16 }
        }
        let account = try JSONSerialization.jsonObject(with: Data(contentsOf: Paths.fixture("service-account.json"))) as? [String: Any]
        var secrets = pemLines(try String(contentsOf: Paths.fixture("AuthKey_TESTKEY123.p8"), encoding: .utf8))
        secrets += pemLines(account?["private_key"] as? String ?? "")
        secrets += [PushCloudHarness.clientSecret, "ya29.fake-", "wns.fake-", "eyJ"]
        #expect(secrets.count > 6)
        for (name, text) in outputs {
            for secret in secrets { #expect(!text.contains(secret), "\(name) holds a credential (\(secret.prefix(12))…)") }
            #expect(!text.lowercased().contains("bearer "), "\(name) holds an authorization header")
        }
    }
}
