import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// The broadcast's row reader remembers repeating texts across rows and pages: every device
/// still reads back exactly as it was stored.
struct SQLiteDeviceReaderTests {
    static let languages = ["en", "fr", "de", "es", "it", "pt-BR", "nl", "sv", "da", "fi", "nb", "pl", "cs", "hu", "ro", "el",
                            "tr", "ru", "ja", "ko"]

    static func registry() throws -> (TempDir, SQLiteRegistry) {
        let dir = TempDir("registry")
        let defaults = RegistryDefaults(app: "main", environment: .production, apps: ["main", "chat", "shop"],
                                        environments: ["chat": .development])
        return (dir, try SQLiteRegistry(path: dir.path("registry.sqlite"), defaults: defaults))
    }

    /// 20 languages (past the 16 found by a scan), 3 apps, both environments, several token
    /// kinds, zones or none; read in pages of 7, so what the reader remembers crosses pages.
    @Test func everyDeviceReadsBackAsStored() throws {
        let (_, registry) = try Self.registry()
        defer { registry.close() }
        var stored: [String: Device] = [:]
        for i in 0..<90 {
            let platform: Platform = [.apns, .fcm, .wns][i % 3]
            let handle = switch platform {
            case .apns: String(format: "%064lx", i)
            case .fcm: "fcm-\(i)"
            default: "https://db5.notify.windows.com/?token=w\(i)"
            }
            var r = Registration(id: "d\(i)", platform: platform, handle: handle, tags: i % 4 == 0 ? [] : ["t\(i % 5)", "u\(i)"],
                                 lang: i % 7 == 0 ? nil : LanguageTag(Self.languages[i % Self.languages.count]),
                                 app: [nil, "chat", "shop"][i % 3 == 0 ? (i / 3) % 3 : i % 3], tz: i % 2 == 0 ? "Europe/Paris" : nil)
            if platform == .apns {
                r.environment = i % 6 == 0 ? .development : nil
                r.tokenKind = i % 9 == 0 ? .voip : nil
            }
            stored["d\(i)"] = try registry.upsert(r, now: Date(timeIntervalSince1970: 1_700_000_000 + Double(i)))
        }
        var read: [String: Device] = [:]
        try registry.forEach(platforms: Set(Platform.allCases), matching: nil, pageSize: 7) { read[$0.id] = $0; return true }
        #expect(read.count == stored.count)
        for (id, device) in stored { #expect(read[id] == device, "\(id)") }
        #expect(Set(read.values.compactMap(\.lang?.value)).count == Self.languages.count)
    }

    /// A row the registry never wrote: an unknown platform is an error naming the device; an
    /// unknown token kind reads as `device`.
    @Test func unknownStoredValues() throws {
        let (_, registry) = try Self.registry()
        defer { registry.close() }
        try registry.upsert(RegistryFixture.reg("odd", .apns, String(repeating: "ab", count: 32)))
        try registry.locked { db in try db.execute("UPDATE devices SET token_kind = 'pager' WHERE id = 'odd'") }
        #expect(try registry.device(id: "odd")?.tokenKind == .device)
        try registry.locked { db in try db.execute("UPDATE devices SET platform = 'ios' WHERE id = 'odd'") }
        let error = #expect(throws: RegistryError.self) {
            try registry.forEach(platforms: Set(Platform.allCases), matching: nil) { _ in true }
        }
        #expect(error?.message.contains(#"device odd has unknown platform "ios""#) == true, "\(String(describing: error))")
    }
}
