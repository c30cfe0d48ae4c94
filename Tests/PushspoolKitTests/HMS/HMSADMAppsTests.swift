import Foundation
import Testing

/// Two apps, each routing `hms` and `adm` to providers of its own (its own Huawei app id and
/// Amazon client): one campaign to both apps reaches each app's devices through that app's
/// providers only, each with its own token.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct HMSADMAppsTests {
    @Test func eachAppsDevicesGoThroughItsOwnProviders() throws {
        let dir = TempDir("hms-adm-apps")
        var fakes: [String: (hms: FakeServer, adm: FakeServer)] = [:]
        var providers: [String] = []
        for (app, n) in [("shop", "1"), ("news", "2")] {
            let hms = try FakeServer("hms", args: ["app-id": "10400000\(n)", "client-id": "10400000\(n)", "client-secret": "hms-\(app)"], dir: dir)
            let adm = try FakeServer("adm", args: ["client-id": "amzn1.application-oa2-client.\(app)", "client-secret": "adm-\(app)"], dir: dir)
            fakes[app] = (hms, adm)
            providers.append(#""hms-\#(app)": {"type": "hms", "app_id": "10400000\#(n)", "client_id": "10400000\#(n)", "client_secret": "hms-\#(app)", "#
                             + #""endpoint": "\#(hms.url)", "token_endpoint": "\#(hms.url)/oauth2/v3/token"}"#)
            providers.append(#""adm-\#(app)": {"type": "adm", "client_id": "amzn1.application-oa2-client.\#(app)", "client_secret": "adm-\#(app)", "#
                             + #""endpoint": "\#(adm.url)", "token_endpoint": "\#(adm.url)/auth/o2/token"}"#)
        }
        dir.write("pushspool.json", """
            {"spool": "spool", "providers": {\(providers.joined(separator: ", "))},
             "apps": {"shop": {"routes": {"hms": "hms-shop", "adm": "adm-shop"}}, "news": {"routes": {"hms": "hms-news", "adm": "adm-news"}}},
             "default_app": "shop", "tls": {"ca_file": "\(Paths.fixture("ca.pem").path)"}}
            """)
        let config = dir.path("pushspool.json")
        try initSpool(["--config", config], cwd: dir.url)
        var lines: [String] = []
        for app in ["shop", "news"] {
            for i in 0..<3 {
                lines.append(#"{"id": "\#(app)-h\#(i)", "app": "\#(app)", "platform": "hms", "handle": "\#(app)-tok-\#(i)", "tags": ["all"]}"#)
                lines.append(#"{"id": "\#(app)-a\#(i)", "app": "\#(app)", "platform": "adm", "handle": "\#(app)-fire-\#(i)", "tags": ["all"]}"#)
            }
        }
        dir.write("devices.jsonl", lines.joined(separator: "\n") + "\n")
        var r = try runPushspool(["import", dir.path("devices.jsonl"), "--config", config], cwd: dir.url)
        try #require(r.status == 0, "\(r.stderr)")
        dir.write("spool/incoming/both.json", #"{"to_tag": "all", "app": "*", "pns": ["hms", "adm"], "message": "m"}"#)
        r = try runPushspool(["run", "--once", "--config", config], cwd: dir.url)
        #expect(r.status == 0, "\(r.stderr)")
        let delivered = dir.jsonLines("spool/results/both.jsonl").filter { $0["type"] as? String == "delivery" }
        #expect(delivered.count == 12 && delivered.allSatisfy { $0["status"] as? String == "delivered" }, "\(delivered)")
        #expect(delivered.allSatisfy { ($0["provider"] as? String) == "\($0["platform"] as? String ?? "")-\($0["app"] as? String ?? "")" }, "\(delivered)")
        for (app, f) in fakes {
            let hms = f.hms.syncedState(), adm = f.adm.state()
            #expect((hms.list("problems") ?? ["?"]).isEmpty && (adm.list("problems") ?? ["?"]).isEmpty, "\(app): \(hms["problems"] ?? "") \(adm["problems"] ?? "")")
            let tokens = ((hms.list("sent") as? [[String: Any]]) ?? []).flatMap { ($0["tokens"] as? [String]) ?? [] }
            #expect(Set(tokens) == Set((0..<3).map { "\(app)-tok-\($0)" }), "\(app): \(tokens)")
            #expect(Set((adm.dict("perDevice") ?? [:]).keys) == Set((0..<3).map { "\(app)-fire-\($0)" }), "\(app)")
            #expect(hms.int("tokenRequests") == 1 && adm.int("tokenRequests") == 1, "\(app): one token each")
        }
    }
}
