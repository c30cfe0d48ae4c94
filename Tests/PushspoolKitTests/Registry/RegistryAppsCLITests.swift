import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// Every way in takes `app` and (APNs) `environment`: `register`, `unregister --app`, `import`
/// lines, register and unregister jobs; `devices --app` lists one app's devices. Unknown apps
/// and an environment on a device that is not APNs are refused naming the field.
@Suite struct RegistryAppsCLITests {
    static let token = String(repeating: "ab", count: 32)

    func spoolWithApps() throws -> (TempDir, [String]) {
        let (dir, spool) = try initializedSpool("registry-apps-cli")
        dir.write("pushspool.json", #"{"spool": "\#(dir.path("spool"))", "apps": {"chat": {}, "shop": {}}, "default_app": "chat"}"#)
        return (dir, spool + ["--config", dir.path("pushspool.json")])
    }

    @Test func registerUnregisterAndDevicesTakeTheApp() throws {
        let (dir, args) = try spoolWithApps()
        _ = dir
        var r = try runPushspool(["register", "--platform", "apns", "--handle", Self.token, "--tag", "t", "--id", "a1",
                                  "--app", "shop", "--environment", "sandbox"] + args)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("app shop; development"), "\(r.stdout)")
        // The same token in the default app is another device.
        r = try runPushspool(["register", "--platform", "apns", "--handle", Self.token, "--tag", "t", "--id", "a2"] + args)
        #expect(r.status == 0, "\(r.stderr)")
        r = try runPushspool(["devices", "--app", "shop"] + args)
        #expect(r.stdout.split(separator: "\n").count == 1)
        #expect(r.stdout.contains(#""id":"a1","platform":"apns","app":"shop","environment":"development""#), "\(r.stdout)")
        r = try runPushspool(["devices", "--count"] + args)
        #expect(r.stdout == "2\n")
        r = try runPushspool(["register", "--platform", "fcm", "--handle", "tok", "--app", "blog"] + args)
        #expect(r.status == 65)
        #expect(r.stderr.contains(#"--app: unknown app "blog" (expected chat, shop)"#), "\(r.stderr)")
        r = try runPushspool(["register", "--platform", "fcm", "--handle", "tok", "--environment", "production"] + args)
        #expect(r.status == 65)
        #expect(r.stderr.contains("--environment: only APNs devices have an environment"), "\(r.stderr)")
        r = try runPushspool(["unregister", "--handle", Self.token, "--app", "shop"] + args)
        #expect(r.status == 0 && r.stdout.contains("unregistered a1"), "\(r.stdout)\(r.stderr)")
        r = try runPushspool(["devices", "--app", "chat"] + args)
        #expect(r.stdout.contains(#""id":"a2""#), "\(r.stdout)")
    }

    @Test func importLinesNameTheirAppAndEnvironment() throws {
        let (dir, args) = try spoolWithApps()
        dir.write("devices.jsonl", """
            {"id": "i1", "platform": "apns", "handle": "\(Self.token)", "tags": ["t"], "app": "shop", "environment": "development"}
            {"id": "i2", "platform": "apns", "handle": "\(Self.token)", "tags": ["t"]}
            {"id": "i3", "platform": "fcm", "handle": "f3", "tags": ["t"], "app": "news"}
            {"id": "i4", "platform": "fcm", "handle": "f4", "tags": ["t"], "environment": "production"}
            """)
        let r = try runPushspool(["import", dir.path("devices.jsonl")] + args)
        #expect(r.status == 65)
        #expect(r.stderr.contains(#"line 3: app: unknown app "news" (expected chat, shop)"#), "\(r.stderr)")
        #expect(r.stderr.contains("line 4: environment: only APNs devices have an environment"), "\(r.stderr)")
        let registry = try SQLiteRegistry(path: dir.path("spool/registry.sqlite"))
        defer { registry.close() }
        #expect(try registry.device(id: "i1")?.app == "shop")
        #expect(try registry.device(id: "i1")?.environment == .development)
        #expect(try registry.device(id: "i2")?.app == "chat")
        #expect(try registry.device(id: "i2")?.environment == .production)
    }

    /// An app whose APNs provider is the sandbox: its devices that name no environment are
    /// development devices, whichever way they come in (the default app's provider is production).
    @Test func aDeviceWithoutEnvironmentGetsItsOwnAppsProviderEnvironment() throws {
        let (dir, spool) = try initializedSpool("registry-apps-env")
        let key = Paths.packageRoot.appendingPathComponent("Tests/Fixtures/AuthKey_TESTKEY123.p8").path
        dir.write("pushspool.json", #"""
            {"spool": "\#(dir.path("spool"))", "default_app": "chat",
             "providers": {"apns-prod": {"type": "apns", "team_id": "ABCDE12345", "key_id": "TESTKEY123", "key_file": "\#(key)"},
                           "apns-dev": {"type": "apns", "team_id": "ABCDE12345", "key_id": "TESTKEY123", "key_file": "\#(key)", "environment": "sandbox"}},
             "apps": {"chat": {"routes": {"apns": "apns-prod"}, "apns_topic": "com.example.chat"},
                      "beta": {"routes": {"apns": "apns-dev"}, "apns_topic": "com.example.beta"}}}
            """#)
        let args = spool + ["--config", dir.path("pushspool.json")]
        dir.write("devices.jsonl", """
            {"id": "b1", "platform": "apns", "handle": "\(Self.token)", "tags": ["t"], "app": "beta"}
            {"id": "b2", "platform": "apns", "handle": "\(String(repeating: "cd", count: 32))", "tags": ["t"], "app": "beta", "environment": "production"}
            {"id": "c1", "platform": "apns", "handle": "\(Self.token)", "tags": ["t"]}
            """)
        let imported = try runPushspool(["import", dir.path("devices.jsonl")] + args)
        #expect(imported.status == 0, "\(imported.stderr)")
        let registered = try runPushspool(["register", "--platform", "apns", "--handle", String(repeating: "ef", count: 32),
                                           "--tag", "t", "--id", "b3", "--app", "beta"] + args)
        #expect(registered.status == 0, "\(registered.stderr)")
        let registry = try SQLiteRegistry(path: dir.path("spool/registry.sqlite"))
        defer { registry.close() }
        #expect(try registry.device(id: "b1")?.environment == .development)
        #expect(try registry.device(id: "b2")?.environment == .production)
        #expect(try registry.device(id: "b3")?.environment == .development)
        #expect(try registry.device(id: "c1")?.environment == .production)
    }

    @Test func registerAndUnregisterJobsTakeTheApp() throws {
        let (dir, args) = try spoolWithApps()
        let incoming = dir.path("spool/incoming")
        try Data(#"{"kind": "register", "id": "j1", "platform": "apns", "handle": "\#(Self.token)", "tags": ["t"], "app": "shop", "environment": "sandbox"}"#.utf8)
            .write(to: URL(fileURLWithPath: incoming + "/reg.json"))
        try Data(#"{"kind": "register", "platform": "fcm", "handle": "f", "tags": ["t"], "app": "nope"}"#.utf8)
            .write(to: URL(fileURLWithPath: incoming + "/bad.json"))
        var r = try runPushspool(["run", "--once"] + args)
        #expect(r.status == 0, "\(r.stderr)")
        let registry = try SQLiteRegistry(path: dir.path("spool/registry.sqlite"))
        #expect(try registry.device(id: "j1")?.app == "shop")
        #expect(try registry.device(id: "j1")?.environment == .development)
        registry.close()
        let bad = try String(contentsOfFile: dir.path("spool/results/bad.jsonl"), encoding: .utf8)
        #expect(bad.contains(#"unknown app \"nope\""#), "\(bad)")
        try Data(#"{"kind": "unregister", "handle": "\#(Self.token)", "app": "shop"}"#.utf8)
            .write(to: URL(fileURLWithPath: incoming + "/unreg.json"))
        r = try runPushspool(["run", "--once"] + args)
        r = try runPushspool(["devices", "--count"] + args)
        #expect(r.stdout == "0\n", "\(r.stdout)")
    }
}
