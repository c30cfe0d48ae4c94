import Foundation
import Testing
@testable import PushspoolKit

/// The real binary against the fake ADM (token endpoint + per-device sends), which verifies the
/// grant (scope messaging:push), the bearer, the type-version headers and 6 KB of string data.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct ADMIntegrationTests {
    /// Each answer's outcome; a canonical id replaces the handle, and the next campaign sends to it.
    @Test func perDeviceOutcomesAndCanonicalID() throws {
        let h = try PushCloudHarness(admArgs: [:])
        let ids = ["ok-1", "gone-1", "invalid-1", "old-1", "flaky-1"]
        try h.register(ids.map { ("a-\($0)", "adm", $0) })
        let d = try h.runOnce("c1", #"{"to_tag": "username:alice", "pns": ["adm"], "title": "T", "message": "m", "data": {"k": "v"}, "collapse_id": "news", "ttl_seconds": 3600}"#)
        let expected = ["ok-1": "delivered", "old-1": "delivered", "flaky-1": "delivered", "gone-1": "unregistered", "invalid-1": "unregistered"]
        for (id, status) in expected { #expect(d["a-\(id)"]?.str("status") == status, "\(id)") }
        #expect(try h.registeredIDs() == ["a-ok-1", "a-old-1", "a-flaky-1"])
        let registry = try SQLiteRegistry(path: h.dir.path("spool/registry.sqlite"))
        #expect(try registry.device(id: "a-old-1")?.handle == "new-1")
        registry.close()

        var s = try #require(h.adm).state()
        #expect((s.list("problems") ?? ["?"]).isEmpty, "\(s["problems"] ?? "")")
        #expect(s.int("tokenRequests") == 1)
        let body = try #require(s.dict("lastBody"))
        #expect(body.str("consolidationKey") == "news")
        #expect(body.int("expiresAfter") == 3600)
        let data = try #require(s.dict("perDevice")?.dict("ok-1")?.dict("data"))
        #expect(data.str("message") == "m" && data.str("title") == "T" && data.str("k") == "v")

        _ = try h.runOnce("c2", #"{"to_tag": "username:alice", "pns": ["adm"], "message": "again"}"#)
        s = try #require(h.adm).state()
        #expect(s.dict("perDevice")?.dict("new-1")?.int("attempts") == 1)
        #expect(s.dict("perDevice")?.dict("old-1")?.int("attempts") == 1)
        #expect(s.int("tokenRequests") == 1, "the second process sent with the token the first cached")
        #expect(!h.visibleText([]).contains("adm-secret"))
    }

    /// Every other answer of Amazon's table, through the binary: each refusal of the message
    /// fails its device and keeps it registered; a 500 is retried.
    @Test func everyRefusalFailsItsDeviceAndKeepsIt() throws {
        let h = try PushCloudHarness(admArgs: [:])
        let reasons = ["InvalidData", "InvalidConsolidationKey", "InvalidExpiration", "InvalidChecksum", "InvalidType", "MessageTooLarge"]
        let ids = reasons.map { "reason-\($0)-1" } + ["status-413-1", "status-500-1"]
        try h.register(ids.map { ("a-\($0)", "adm", $0) })
        let d = try h.runOnce("c", #"{"to_tag": "username:alice", "pns": ["adm"], "message": "m"}"#)
        for reason in reasons {
            let line = d["a-reason-\(reason)-1"]
            #expect(line?.str("status") == "failed" && line?.str("code") == "400" && line?.str("reason") == reason, "\(reason): \(line ?? [:])")
            #expect(line?.int("attempts") == 1, "\(reason) is not retried")
        }
        #expect(d["a-status-413-1"]?.str("status") == "failed" && d["a-status-413-1"]?.str("reason") == "MessageTooLarge")
        #expect(d["a-status-500-1"]?.str("status") == "delivered" && d["a-status-500-1"]?.int("attempts") == 2)
        #expect(try h.registeredIDs() == Set(ids.map { "a-\($0)" }), "a refused message deletes no device")
    }

    /// 429 with Retry-After holds back that device only: the others are not kept waiting.
    @Test func retryAfterIsHonouredPerDevice() throws {
        let h = try PushCloudHarness(admArgs: [:])
        try h.register([("a-t", "adm", "throttle-1")] + (0..<20).map { ("a-\($0)", "adm", "ok-\($0)") })
        let d = try h.runOnce("c", #"{"to_tag": "username:alice", "pns": ["adm"], "message": "m"}"#)
        #expect(d.count == 21 && d.values.allSatisfy { $0.str("status") == "delivered" })
        #expect(d["a-t"]?.int("attempts") == 2)
        let s = try #require(h.adm).state()
        let times = (s.dict("perDevice")?.dict("throttle-1")?.list("times") as? [Double]) ?? []
        #expect(times.count == 2 && times[1] - times[0] >= 1.9, "\(times)")
        // Everyone else was sent before the throttled device's wait was over.
        let others = (0..<20).compactMap { (s.dict("perDevice")?.dict("ok-\($0)")?.list("times") as? [Double])?.first }
        #expect(others.count == 20 && others.allSatisfy { $0 < times[1] })
    }

    /// 401 AccessTokenExpired: one new token, every device delivered.
    @Test func expiredTokenIsRefreshedOnce() throws {
        let h = try PushCloudHarness(admArgs: ["expire-first-token": "true"])
        try h.register((0..<10).map { ("a-\($0)", "adm", "ok-\($0)") })
        let d = try h.runOnce("c", #"{"to_tag": "username:alice", "pns": ["adm"], "message": "m"}"#)
        #expect(d.values.allSatisfy { $0.str("status") == "delivered" })
        #expect(try #require(h.adm).state().int("tokenRequests") == 2)
    }

    /// A revoked client pauses its provider only: the HMS devices of the same job are delivered.
    @Test func revokedClientPausesThatProviderOnly() throws {
        let h = try PushCloudHarness(hmsArgs: [:], admArgs: ["revoked": "true"])
        try h.register((0..<5).map { ("a-\($0)", "adm", "ok-\($0)") } + (0..<5).map { ("h-\($0)", "hms", "tok-\($0)") })
        let d = try h.runOnce("c", #"{"to_tag": "username:alice", "pns": ["adm", "hms"], "message": "m"}"#)
        #expect((0..<5).allSatisfy { d["h-\($0)"]?.str("status") == "delivered" })
        #expect((0..<5).allSatisfy { d["a-\($0)"]?.str("status") == "failed" })
        #expect(try h.registeredIDs().count == 10, "a config error must not delete devices")
        #expect(try #require(h.adm).state().int("sends") == 0)
        // status names the paused provider, and only it.
        let status = try h.cli(["status", "--json"])
        let paused = ((try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8))) as? [String: Any])?["paused_providers"] as? [[String: Any]] ?? []
        #expect(paused.compactMap { $0["provider"] as? String } == ["adm"], "\(status.stdout)")
        #expect(try h.cli(["status"]).stdout.contains("provider adm last paused"))
    }
}

/// `config --check` fetches an HMS and an ADM token: a refused client is a problem naming its provider.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct HMSADMConfigCheckTests {
    @Test func configCheckFetchesATokenFromEach() throws {
        let h = try PushCloudHarness(hmsArgs: [:], admArgs: [:])
        let ok = try h.cli(["config", "--check"])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("configuration ok"))
        #expect(!ok.stdout.contains("hms-secret") && !ok.stdout.contains("adm-secret"))
        #expect(try #require(h.hms).syncedState().int("tokenRequests") == 1)
        #expect(try #require(h.adm).state().int("tokenRequests") == 1)

        let revoked = try PushCloudHarness(hmsArgs: ["revoked": "true"], admArgs: [:])
        let bad = try revoked.cli(["config", "--check"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("providers.hms: no access token: hms token endpoint answered HTTP 401 invalid_client"), "\(bad.stderr)")
        #expect(!bad.stderr.contains("providers.adm:"))

        // Keys that cannot work: one line each, naming the key, before any token is asked for.
        revoked.dir.write("pushspool.json", #"{"spool": "spool", "providers": {"hms": {"app_id": "a/b", "client_id": "1", "client_secret": "x", "endpoint": "http://127.0.0.1:1"}, "#
                          + #""adm": {"client_id": "c", "client_secret": "y", "token_endpoint": "ftp://x"}}}"#)
        let keys = try revoked.cli(["config", "--check"])
        #expect(keys.status == 78)
        #expect(keys.stderr.split(separator: "\n").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) } == [
            #"providers.hms.app_id: "a/b" is not an app id (letters, digits, - and _)"#,
            #"providers.hms.endpoint: "http://127.0.0.1:1" is not an https URL"#,
            #"providers.adm.token_endpoint: "ftp://x" is not an https URL"#,
        ], "\(keys.stderr)")
    }
}
