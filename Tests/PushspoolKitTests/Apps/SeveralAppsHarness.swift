import Foundation
import Testing
@testable import PushspoolKit

/// One pushspool serving several apps, against local fakes (README "Several apps"): two iOS
/// apps (`chat`, `shop`) on one team key, a third (`legacy`) on another team's key, two Firebase
/// projects (two fake FCM instances, two service accounts), and a second fake APNs instance
/// standing in for the sandbox host where development devices go. Runs the real binary.
final class SeveralAppsHarness {
    let dir = TempDir("pushspool-apps")
    let production: FakeServer
    let sandbox: FakeServer
    let fcmChat: FakeServer
    let fcmShop: FakeServer

    static let acmeTeam = "ACMETEAM01", acmeKey = "TESTKEY123"
    static let otherTeam = "OTHERTEAM1", otherKey = "OTHERKEY12"
    static let topics = ["chat": "com.acme.chat", "shop": "com.acme.shop", "legacy": "com.other.legacy"]

    /// The devices: (id, app, platform, environment, handle).
    static let devices: [(id: String, app: String, platform: String, environment: String?, handle: String)] = [
        ("chat-p1", "chat", "apns", nil, token(1)), ("chat-p2", "chat", "apns", "production", token(2)),
        ("chat-d1", "chat", "apns", "development", token(3)),
        ("chat-f1", "chat", "fcm", nil, "chat-token-1"), ("chat-f2", "chat", "fcm", nil, "chat-token-2"),
        ("shop-p1", "shop", "apns", nil, token(4)),
        ("shop-d1", "shop", "apns", "sandbox", token(5)), ("shop-d2", "shop", "apns", "development", token(6)),
        ("shop-f1", "shop", "fcm", nil, "shop-token-1"),
        ("legacy-p1", "legacy", "apns", nil, token(7)), ("legacy-p2", "legacy", "apns", nil, token(8)),
    ]

    static func token(_ n: Int) -> String { String(format: "%064x", n) }

    /// `apnsArgs`: extra options for both fake APNs hosts (a disallowed topic, a refused key).
    init(apnsArgs: [String: String] = [:], extraDevices: [String] = []) throws {
        var apns = apnsArgs
        apns["topic"] = Self.topics.values.sorted().joined(separator: ",")
        apns["keys"] = "\(Self.acmeTeam):\(Self.acmeKey),\(Self.otherTeam):\(Self.otherKey)"
        production = try FakeServer("apns", args: apns, dir: dir)
        sandbox = try FakeServer("apns", args: apns, dir: dir)
        fcmChat = try FakeServer("fcm", args: ["project": "chat-project", "client-email": "push@chat-project.iam.gserviceaccount.com"], dir: dir)
        fcmShop = try FakeServer("fcm", args: ["project": "shop-project", "client-email": "push@shop-project.iam.gserviceaccount.com"], dir: dir)
        let account = try String(contentsOf: Paths.fixture("service-account.json"), encoding: .utf8)
        for (name, fake, project) in [("chat", fcmChat, "chat-project"), ("shop", fcmShop, "shop-project")] {
            dir.write("sa-\(name).json", account.replacingOccurrences(of: "PORT", with: String(fake.port))
                .replacingOccurrences(of: "pushspool-test", with: project)
                .replacingOccurrences(of: "pushspool@", with: "push@"))
        }
        let key = Paths.fixture("AuthKey_TESTKEY123.p8").path
        let hosts = #""production_endpoint": "\#(production.url)", "sandbox_endpoint": "\#(sandbox.url)""#
        dir.write("pushspool.json", """
            {"spool": "spool", "retry": {"max_attempts": 3, "base_delay_ms": 10, "max_delay_ms": 200},
             "providers": {
                "apns-acme": {"type": "apns", "team_id": "\(Self.acmeTeam)", "key_id": "\(Self.acmeKey)", "key_file": "\(key)", \(hosts)},
                "apns-other": {"type": "apns", "team_id": "\(Self.otherTeam)", "key_id": "\(Self.otherKey)", "key_file": "\(key)",
                               "topic": "com.other.legacy", \(hosts)},
                "fcm-chat": {"type": "fcm", "service_account_file": "sa-chat.json", "endpoint": "\(fcmChat.url)"},
                "fcm-shop": {"type": "fcm", "service_account_file": "sa-shop.json", "endpoint": "\(fcmShop.url)"}},
             "apps": {
                "chat": {"routes": {"apns": "apns-acme", "fcm": "fcm-chat"}, "apns_topic": "com.acme.chat"},
                "shop": {"routes": {"apns": "apns-acme", "fcm": "fcm-shop"}, "apns_topic": "com.acme.shop"},
                "legacy": {"routes": {"apns": "apns-other"}}},
             "default_app": "chat",
             "tls": {"ca_file": "\(Paths.fixture("ca.pem").path)"}}
            """)
        try initSpool(["--config", dir.path("pushspool.json")], cwd: dir.url)
        let lines = Self.devices.map { d in
            #"{"id": "\#(d.id)", "platform": "\#(d.platform)", "handle": "\#(d.handle)", "tags": ["all"], "app": "\#(d.app)""#
                + (d.environment.map { #", "environment": "\#($0)""# } ?? "") + "}"
        } + extraDevices
        dir.write("devices.jsonl", lines.joined(separator: "\n") + "\n")
        let r = try cli(["import", dir.path("devices.jsonl")])
        try #require(r.status == 0, "\(r.stderr)")
    }


    @discardableResult
    func cli(_ args: [String]) throws -> RunResult {
        try runPushspool(args + ["--config", dir.path("pushspool.json")], cwd: dir.url)
    }

    /// Drops a broadcast job to apns and fcm for `app` (a JSON value, or none) and runs it.
    func send(_ id: String, app: String?, pns: String = #"["apns", "fcm"]"#) throws {
        let field = app.map { #", "app": \#($0)"# } ?? ""
        dir.write("spool/incoming/\(id).json", #"{"id": "\#(id)", "broadcast": true, "pns": \#(pns), "message": "hi"\#(field)}"#)
        let r = try cli(["run", "--once"])
        try #require(r.status == 0, "\(r.stderr)")
    }

    /// A fake's stats once every connection is closed (the run is over). Asked of the fake, not
    /// read from its file alone: its first file also says no session is open.
    func settled(_ fake: FakeServer) -> [String: Any] {
        eventually("the fake's connections to close", timeout: 20, poll: 0.05, { fake.syncedState() },
                   until: { ($0["openSessions"] as? Int ?? 1) == 0 })
    }

    /// Notifications a fake APNs host accepted, by topic (its own count).
    func deliveredByTopic(_ fake: FakeServer) -> [String: Int] {
        (settled(fake)["deliveredByTopic"] as? [String: Int]) ?? [:]
    }

    /// Sends a fake FCM project accepted (its own count).
    func delivered(_ fake: FakeServer) -> Int { fake.state()["delivered"] as? Int ?? -1 }

    /// The job's delivery lines by device.
    func deliveries(_ id: String) -> [String: ResultRecord.Delivery] {
        var out: [String: ResultRecord.Delivery] = [:]
        for d in dir.records("spool/results/\(id).jsonl").compactMap(\.asDelivery) { out[d.device ?? "?"] = d }
        return out
    }
}
