import Foundation
import Testing
import PushspoolCore
import PushspoolKit

/// `config --check` with `apps` (README "Several apps"): every app's routes, topic and
/// credentials are checked, each problem names its app, all at once, exit 78; the effective
/// config prints every app and named provider with its secrets redacted.
@Suite struct AppsConfigCheckTests {
    static func config(keyFile: String, secondKey: String) -> String {
        #"""
        {"providers": {
            "apns-acme": {"type": "apns", "team_id": "ABCDE12345", "key_id": "TESTKEY123", "key_file": "\#(keyFile)", "environment": "sandbox"},
            "apns-other": {"type": "apns", "team_id": "FGHIJ12345", "key_id": "TESTKEY123", "key_file": "\#(secondKey)", "topic": "com.other.app"},
            "wns-news": {"type": "wns", "client_id": "ms-app://s-1", "client_secret": "wns-Secret-123"}},
         "apps": {
            "chat": {"routes": {"apns": "apns-acme", "wns": "wns-news"}, "apns_topic": "com.acme.chat", "max_per_second": 20},
            "shop": {"routes": {"apns": "apns-acme"}, "apns_topic": "com.acme.shop"},
            "legacy": {"routes": {"apns": "apns-other"}}},
         "default_app": "chat"}
        """#
    }

    @Test func everyAppIsCheckedAndNamedInItsProblems() throws {
        let dir = TempDir("pushspool-apps-cfg")
        let key = Paths.packageRoot.appendingPathComponent("Tests/Fixtures/AuthKey_TESTKEY123.p8").path
        dir.write("pushspool.json", Self.config(keyFile: key, secondKey: "missing.p8"))
        let r = try runPushspool(["config", "--check", "--config", dir.path("pushspool.json")], cwd: dir.url)
        #expect(r.status == 78)
        #expect(r.stderr.contains("providers.apns-other.key_file: cannot read \(dir.path("missing.p8")): no such file (used by app legacy)"), "\(r.stderr)")
        #expect(!r.stderr.contains("apns-acme"), "\(r.stderr)")
    }

    @Test func theEffectiveConfigPrintsEveryAppWithSecretsRedacted() throws {
        let dir = TempDir("pushspool-apps-cfg")
        let key = Paths.packageRoot.appendingPathComponent("Tests/Fixtures/AuthKey_TESTKEY123.p8").path
        dir.write("pushspool.json", Self.config(keyFile: key, secondKey: key))
        let r = try runPushspool(["config", "--check", "--config", dir.path("pushspool.json")], cwd: dir.url)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stdout.contains("wns-Secret-123"))
        let json = try JSONParser.parse(Array(r.stdout.split(separator: "\n").dropLast().joined(separator: "\n").utf8))
        #expect(json["default_app"]?.stringValue == "chat")
        #expect(json["apps"]?["shop"]?["apns_topic"]?.stringValue == "com.acme.shop")
        #expect(json["apps"]?["legacy"]?["apns_topic"]?.stringValue == "com.other.app")
        #expect(json["apps"]?["chat"]?["routes"]?["wns"]?.stringValue == "wns-news")
        #expect(json["providers"]?["apns-acme"]?["type"]?.stringValue == "apns")
        #expect(json["providers"]?["wns-news"]?["client_secret"]?.stringValue == "***")
    }

    @Test func oneProviderPerNameIsSharedByTheAppsNamingIt() throws {
        let key = Paths.packageRoot.appendingPathComponent("Tests/Fixtures/AuthKey_TESTKEY123.p8").path
        let config = try ConfigParser.parse(Array(Self.config(keyFile: key, secondKey: key).utf8), source: "t", environment: [:])
        let apps = try EngineSetup.makeApps(config: config, spool: nil, log: Log(minimum: .error))
        defer { apps.shutdown() }
        #expect(apps.defaultApp == "chat")
        let chat = try #require(apps.state(app: "chat", platform: .apns)), shop = try #require(apps.state(app: "shop", platform: .apns))
        #expect(chat === shop)
        #expect(chat.name == "apns-acme")
        #expect(apps.state(app: "legacy", platform: .apns)?.name == "apns-other")
        #expect(apps.apps["chat"]?.limiter?.perSecond == 20)
        #expect(apps.providers.count == 4)   // apns-acme, apns-other, wns-news, sandbox
    }
}
