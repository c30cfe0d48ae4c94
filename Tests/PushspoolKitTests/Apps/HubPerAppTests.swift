import Foundation
import Testing

/// Each app may route to its own Azure Notification Hub (README "Several apps"): a device's
/// installation goes to its app's hub, a job for an app sends through that app's hub only, and
/// `hub sync --app A` syncs one app's devices.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized) struct HubPerAppTests {
    static let key = "testkey"

    final class Setup {
        let dir = TempDir("apps-hubs")
        let chat: FakeServer
        let shop: FakeServer

        init() throws {
            chat = try FakeServer("azurehub", args: ["key": HubPerAppTests.key, "hub": "chathub"], dir: dir)
            shop = try FakeServer("azurehub", args: ["key": HubPerAppTests.key, "hub": "shophub"], dir: dir)
            dir.write("pushspool.json", """
                {"spool": "spool", "retry": {"max_attempts": 3, "base_delay_ms": 10, "max_delay_ms": 500},
                 "providers": {"hub-chat": {"type": "azure", "connection_string": "env:NH_CHAT", "hub": "chathub"},
                               "hub-shop": {"type": "azure", "connection_string": "env:NH_SHOP", "hub": "shophub"}},
                 "apps": {"chat": {"routes": {"apns": "hub-chat"}, "apns_topic": "com.acme.chat"},
                          "shop": {"routes": {"apns": "hub-shop"}, "apns_topic": "com.acme.shop"}},
                 "default_app": "chat",
                 "tls": {"ca_file": "\(Paths.fixture("ca.pem").path)"}}
                """)
            _ = try cli(["init"])
        }

        func connection(_ hub: FakeServer) -> String {
            "Endpoint=sb://127.0.0.1:\(hub.port)/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=\(HubPerAppTests.key)"
        }

        @discardableResult
        func cli(_ args: [String]) throws -> RunResult {
            try runPushspool(args + ["--spool", dir.path("spool"), "--config", dir.path("pushspool.json")], cwd: dir.url,
                             env: ["NH_CHAT": connection(chat), "NH_SHOP": connection(shop)])
        }

        func installations(_ hub: FakeServer, _ count: Int) -> [String: [String: Any]] {
            eventually("the hub to hold \(count) installations", timeout: 30, poll: 0.05,
                       { hub.state()["installations"] as? [String: [String: Any]] ?? [:] }, until: { $0.count == count })
        }
    }

    static func token(_ n: Int) -> String { String(format: "%064x", n) }

    @Test func installationsAndSendsGoToTheAppsOwnHub() throws {
        let s = try Setup()
        var r = try s.cli(["register", "--platform", "apns", "--handle", Self.token(1), "--tag", "t", "--id", "c1"])
        #expect(r.status == 0, "\(r.stderr)")
        r = try s.cli(["register", "--platform", "apns", "--handle", Self.token(2), "--tag", "t", "--id", "s1", "--app", "shop"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Array(s.installations(s.chat, 1).keys) == ["c1"])
        #expect(Array(s.installations(s.shop, 1).keys) == ["s1"])

        s.dir.write("spool/incoming/j.json", #"{"id": "j", "tags": "t", "pns": "apns", "message": "hi", "app": "shop"}"#)
        r = try s.cli(["run", "--once"])
        #expect(r.status == 0, "\(r.stderr)")
        let sends = { (hub: FakeServer) in (hub.state()["requests"] as? [[String: Any]] ?? []).filter { $0["status"] as? Int == 201 } }
        _ = eventually("the shop hub's send", timeout: 20, poll: 0.05, { sends(s.shop) }, until: { $0.count == 1 })
        #expect(sends(s.shop).first?["reached"] as? [String] == ["s1"])
        #expect(sends(s.chat).isEmpty)
        let line = s.dir.records("spool/results/j.jsonl").compactMap(\.asDelivery).first
        #expect(line?.app == "shop" && line?.provider == "hub-shop")
    }

    @Test func hubSyncTakesAnApp() throws {
        let s = try Setup()
        s.dir.write("devices.jsonl", """
            {"id": "c1", "platform": "apns", "handle": "\(Self.token(1))", "tags": ["t"]}
            {"id": "s1", "platform": "apns", "handle": "\(Self.token(2))", "tags": ["t"], "app": "shop"}
            {"id": "s2", "platform": "apns", "handle": "\(Self.token(3))", "tags": ["t"], "app": "shop"}
            """)
        // The import writes each device to its app's hub.
        var r = try s.cli(["import", s.dir.path("devices.jsonl")])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Set(s.installations(s.shop, 2).keys) == ["s1", "s2"])
        #expect(Set(s.installations(s.chat, 1).keys) == ["c1"])
        r = try s.cli(["hub", "sync", "--app", "shop"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("hub sync: 2 installations written (apns 2), 0 failed"), "\(r.stdout)")
        r = try s.cli(["hub", "sync"])
        #expect(r.stdout.contains("hub sync: 3 installations written (apns 3), 0 failed"), "\(r.stdout)")
        r = try s.cli(["hub", "sync", "--app", "blog"])
        #expect(r.status == 64)
        #expect(r.stderr.contains(#"--app: unknown app "blog" (expected chat, shop)"#), "\(r.stderr)")
    }
}
