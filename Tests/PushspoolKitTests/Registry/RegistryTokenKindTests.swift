import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// A registration's `token_kind` (APNs): stored, read back, imported, and the audience query
/// keeping only the tokens that serve a job's push type.
@Suite struct RegistryTokenKindTests {
    static func token(_ n: Int) -> String { String(format: "%064x", n) }

    /// One APNs token of every kind and one FCM token under one tag: each kind's query finds its
    /// own token (and the FCM one when FCM is asked too); no kind, all of them.
    @Test(arguments: RegistryBackend.allCases) func theQueryKeepsTheTokensOfOneKind(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        for (i, kind) in APNsTokenKind.allCases.enumerated() {
            let device = try registry.upsert(Registration(id: "k-\(kind.rawValue)", platform: .apns, handle: Self.token(i + 1),
                                                          tags: ["t"], tokenKind: kind == .device ? nil : kind))
            #expect(device.tokenKind == kind)
        }
        try registry.upsert(Registration(id: "android", platform: .fcm, handle: "fcm-1", tags: ["t"]))
        for kind in APNsTokenKind.allCases {
            var seen: [String] = []
            try registry.forEach(platforms: [.apns], tokenKind: kind, matching: .tag("t")) { seen.append($0.id); return true }
            #expect(seen == ["k-\(kind.rawValue)"], "\(kind)")
            #expect(try registry.count(platforms: [.apns], apps: nil, tokenKind: kind, matching: .tag("t")) == 1)
            #expect(try registry.count(platforms: [.apns, .fcm], apps: nil, tokenKind: kind, matching: nil) == 2)
            #expect(try registry.device(id: "k-\(kind.rawValue)")?.tokenKind == kind)
        }
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: .tag("t")) == APNsTokenKind.allCases.count + 1)
        // Re-registering the handle under another kind moves it (one row per handle).
        try registry.upsert(Registration(id: "k-voip", platform: .apns, handle: Self.token(2), tags: ["t"], tokenKind: .pushtotalk))
        #expect(try registry.count(platforms: [.apns], apps: nil, tokenKind: .voip, matching: nil) == 0)
        #expect(try registry.count(platforms: [.apns], apps: nil, tokenKind: .pushtotalk, matching: nil) == 2)
    }

    /// Import lines with a token kind take the fast path and the general one alike; an unknown
    /// kind, or one on a platform that is not APNs, is refused naming `token_kind`.
    @Test(arguments: RegistryBackend.allCases, [false, true])
    func importTakesTokenKinds(backend: RegistryBackend, startEmpty: Bool) throws {
        let (dir, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        if !startEmpty { try registry.upsert(RegistryFixture.reg("keep", .fcm, "k1", ["before"])) }
        let lines = [
            #"{"id":"a","platform":"apns","handle":"\#(Self.token(1))","tags":["activity:m42"],"token_kind":"liveactivity"}"#,
            #"{"id":"b","platform":"apns","handle":"\#(Self.token(2))","tags":["t"]}"#,
            // An escaped id: the general path.
            #"{"id":"c\u0031","platform":"apns","handle":"\#(Self.token(3))","tags":["t"],"token_kind":"pushtostart"}"#,
            #"{"id":"d","platform":"apns","handle":"\#(Self.token(4))","tags":[],"token_kind":"LiveActivity"}"#,
            #"{"id":"e","platform":"fcm","handle":"f1","tags":[],"token_kind":"voip"}"#,
            #"{"id":"f","platform":"apns","handle":"\#(Self.token(6))","tags":[],"token_kind":"device"}"#,
        ]
        dir.write("kinds.jsonl", lines.joined(separator: "\n") + "\n")
        let report = try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("kinds.jsonl"))
        #expect(report.imported == 4)
        #expect(report.refused == [
            #"line 4: token_kind: unknown token kind "LiveActivity" (expected \#(APNsTokenKind.names))"#,
            "line 5: token_kind: only APNs devices have a token kind (this one is fcm)",
        ])
        #expect(try registry.device(id: "a")?.tokenKind == .liveactivity)
        #expect(try registry.device(id: "b")?.tokenKind == .device)
        #expect(try registry.device(id: "c1")?.tokenKind == .pushtostart)
        #expect(try registry.device(id: "f")?.tokenKind == .device)
        #expect(try registry.count(platforms: [.apns], apps: nil, tokenKind: .liveactivity, matching: .tag("activity:m42")) == 1)
        #expect(try registry.count(platforms: [.apns], apps: nil, tokenKind: .device, matching: nil) == 2)
    }

    /// A registry of the last release's schema: every device's token is a device token after
    /// the migration, and the channel table is there.
    @Test func aMigratedRegistryHasDeviceTokens() throws {
        let dir = TempDir("registry-kinds-migrate")
        let path = dir.path("registry.sqlite")
        try RegistryAppsMigrationTests.makeVersion4(at: path, count: 50)
        let registry = try SQLiteRegistry(path: path)
        defer { registry.close() }
        #expect(registry.foundVersion == 4)
        #expect(try registry.count(platforms: [.apns], apps: nil, tokenKind: .device, matching: .tag("t")) == 50)
        #expect(try registry.count(platforms: [.apns], apps: nil, tokenKind: .voip, matching: .tag("t")) == 0)
        #expect(try registry.device(id: "d7")?.tokenKind == .device)
        #expect(try registry.channels(app: AppConfig.implicitID).isEmpty)
    }

    /// The rule, with each entry point's own field name.
    @Test func registrationRulesNameTheField() {
        func problems(_ platform: String, _ kind: String, _ names: RegistrationRules.FieldNames) -> String {
            let handle = platform == "apns" ? Self.token(1) : "tok"
            switch RegistrationRules.registration(id: nil, platform: .string(platform), handle: .string(handle), tags: nil, lang: nil,
                                                  tokenKind: .string(kind), names: names) {
            case .success(let r): return "ok \(r.tokenKind?.rawValue ?? "nil")"
            case .failure(let p): return p.description
            }
        }
        #expect(problems("apns", "voip", .standard) == "ok voip")
        #expect(problems("apns", "phone", .standard) == #"token_kind: unknown token kind "phone" (expected \#(APNsTokenKind.names))"#)
        #expect(problems("fcm", "device", .tutorial) == "TokenKind: only APNs devices have a token kind (this one is fcm)")
    }
}
