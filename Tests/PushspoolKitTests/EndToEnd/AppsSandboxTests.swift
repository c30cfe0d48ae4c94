import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// Jobs name `app` (§ Several apps), run through the real binary on the sandbox: the audience is
/// resolved within those apps only, delivery lines carry each device's app, an unknown app fails
/// the job naming the field, and `validate --resolve` counts per app, platform and environment.
@Suite struct AppsSandboxTests {
    static let config = #"{"apps": {"chat": {"max_per_second": 1000}, "shop": {}, "news": {}}, "default_app": "chat"}"#

    /// A spool with the config and devices: chat 3 (one development), shop 2, news 1.
    func setUp() throws -> (TempDir, [String]) {
        let (dir, spool) = try initializedSpool("apps-sandbox")
        dir.write("pushspool.json", Self.config)
        let args = spool + ["--config", dir.path("pushspool.json")]
        func token(_ n: Int) -> String { String(format: "%064x", n) }
        dir.write("devices.jsonl", """
            {"id": "c1", "platform": "apns", "handle": "\(token(1))", "tags": ["all"]}
            {"id": "c2", "platform": "apns", "handle": "\(token(2))", "tags": ["all"], "environment": "development"}
            {"id": "c3", "platform": "fcm", "handle": "f3", "tags": ["all"]}
            {"id": "s1", "platform": "apns", "handle": "\(token(1))", "tags": ["all"], "app": "shop"}
            {"id": "s2", "platform": "fcm", "handle": "f5", "tags": ["all"], "app": "shop"}
            {"id": "n1", "platform": "fcm", "handle": "f6", "tags": ["all"], "app": "news"}
            """)
        let r = try runPushspool(["import", dir.path("devices.jsonl")] + args)
        try #require(r.status == 0, "\(r.stderr)")
        return (dir, args)
    }

    func job(_ dir: TempDir, _ id: String, app: String?) throws {
        let field = app.map { #", "app": \#($0)"# } ?? ""
        try Data(#"{"id": "\#(id)", "tags": "all", "pns": ["apns", "fcm"], "message": "hi"\#(field)}"#.utf8)
            .write(to: URL(fileURLWithPath: dir.path("spool/incoming/\(id).json")))
    }

    func deliveries(_ dir: TempDir, _ id: String) -> [String: String] {
        var out: [String: String] = [:]
        for d in dir.records("spool/results/\(id).jsonl").compactMap(\.asDelivery) where d.status == .delivered {
            out[d.device ?? "?"] = d.app
        }
        return out
    }

    @Test func eachJobReachesExactlyItsAppsDevices() throws {
        let (dir, args) = try setUp()
        try job(dir, "to-shop", app: #""shop""#)
        try job(dir, "to-default", app: nil)
        try job(dir, "to-two", app: #"["shop", "news"]"#)
        try job(dir, "to-all", app: #""*""#)
        try job(dir, "to-nobody", app: #""blog""#)
        let r = try runPushspool(["run", "--once"] + args)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(deliveries(dir, "to-shop") == ["s1": "shop", "s2": "shop"])
        #expect(deliveries(dir, "to-default") == ["c1": "chat", "c2": "chat", "c3": "chat"])
        #expect(deliveries(dir, "to-two") == ["s1": "shop", "s2": "shop", "n1": "news"])
        #expect(deliveries(dir, "to-all").count == 6)
        #expect(dir.records("spool/results/to-all.jsonl").compactMap(\.asJob).first?.targets == 6)
        let failed = dir.read("spool/results/to-nobody.jsonl") ?? ""
        #expect(failed.contains(#"app: unknown app \"blog\" (expected chat, news, shop)"#), "\(failed)")
        #expect(dir.list("spool/failed").contains("to-nobody.json"))
    }

    @Test func validateResolvesPerAppPlatformAndEnvironment() throws {
        let (dir, args) = try setUp()
        try job(dir, "v", app: #""*""#)
        try FileManager.default.moveItem(atPath: dir.path("spool/incoming/v.json"), toPath: dir.path("v.json"))
        var r = try runPushspool(["validate", "--resolve", dir.path("v.json")] + args)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("app chat: apns via sandbox: 2 devices (production 1, development 1)"), "\(r.stdout)")
        #expect(r.stdout.contains("app shop: fcm via sandbox: 1 devices"), "\(r.stdout)")
        #expect(r.stdout.contains("app news: apns via sandbox: 0 devices (production 0, development 0)"), "\(r.stdout)")
        dir.write("bad.json", #"{"broadcast": true, "pns": "fcm", "message": "x", "app": ["chat", "blog"]}"#)
        r = try runPushspool(["validate", dir.path("bad.json")] + args)
        #expect(r.status == 65)
        #expect(r.stdout.contains(#"app[1]: unknown app "blog" (expected chat, news, shop)"#), "\(r.stdout)")
    }

    @Test func aBadAppFieldIsOneLineNamingIt() {
        for (value, expected) in [(#"5"#, "app: must be an app id"), (#"[]"#, "app: must be an app id"),
                                  (#"["ok", "a/b"]"#, "app[1]: app id must match"), (#""x y""#, "app: app id must match")] {
            let text = #"{"broadcast": true, "pns": "fcm", "message": "x", "app": \#(value)}"#
            do {
                _ = try JobParser.parse(Array(text.utf8), fileName: "j.json")
                Issue.record("\(value) accepted")
            } catch {
                #expect(error.problems.count == 1 && error.problems[0].description.hasPrefix(expected), "\(error.problems)")
            }
        }
    }
}

/// `status` shows the apps of each job it lists (README "Several apps").
@Suite struct AppsStatusTests {
    @Test func statusShowsEachJobsApps() throws {
        let (dir, spool) = try initializedSpool("apps-status")
        dir.write("pushspool.json", #"{"spool": "\#(dir.path("spool"))", "apps": {"chat": {}, "shop": {}}, "default_app": "chat"}"#)
        let args = spool + ["--config", dir.path("pushspool.json")]
        dir.write("spool/active/two.json", #"{"id": "two", "broadcast": true, "pns": ["fcm"], "message": "sale", "app": ["chat", "shop"]}"#)
        dir.write("spool/active/plain.json", #"{"id": "plain", "broadcast": true, "pns": ["fcm"], "message": "sale"}"#)
        for id in ["two", "plain"] { dir.write("spool/control/\(id).pause", "") }
        let json = try runPushspool(["status", "--json"] + args)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout) \(json.stderr)")
        let active = Dictionary(((doc["active"] as? [[String: Any]]) ?? []).map { ($0["id"] as? String ?? "", $0) }) { a, _ in a }
        #expect(active["two"]?["apps"] as? [String] == ["chat", "shop"])
        #expect(active["plain"]?["apps"] as? [String] == ["chat"])
        let text = try runPushspool(["status"] + args)
        #expect(text.stdout.contains("two [app chat,shop]"), "\(text.stdout)")
        #expect(text.stdout.contains("plain [app chat]"), "\(text.stdout)")
    }
}
