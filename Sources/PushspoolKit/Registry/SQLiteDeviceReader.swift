import Foundation
import PushspoolCore

/// Makes `Device`s from rows of `SQLiteRegistry.deviceColumns`. The texts that repeat from row
/// to row (platform, language, app, environment, token kind) are recognised by their bytes
/// (`RepeatedTexts`), so a broadcast's million rows make Strings only for what each row alone
/// holds: its id, handle and tags.
struct SQLiteDeviceReader: Sendable {
    private var platforms = RepeatedTexts<Platform>()
    private var languages = RepeatedTexts<LanguageTag>()
    private var apps = RepeatedTexts<String>()
    private var environments = RepeatedTexts<APNsEnvironment>()
    private var tokenKinds = RepeatedTexts<APNsTokenKind>()

    mutating func device(from stmt: SQLiteStatement) throws -> Device {
        guard let platform = platforms.value(stmt.bytes(2), make: { Platform(rawValue: $0) }) else {
            throw RegistryError("registry: device \(stmt.text(1)) has unknown platform \"\(stmt.text(2))\"")
        }
        // ` a b c `, stored sorted: split on the bytes, one String per tag.
        let list = stmt.bytes(5)
        var tags: [String] = []
        tags.reserveCapacity(max(0, list.reduce(0) { $1 == 0x20 ? $0 + 1 : $0 } - 1))
        var start = 0
        for i in 0..<list.count where list[i] == 0x20 {
            if i > start { tags.append(String(decoding: UnsafeBufferPointer(rebasing: list[start..<i]), as: UTF8.self)) }
            start = i + 1
        }
        if start < list.count { tags.append(String(decoding: UnsafeBufferPointer(rebasing: list[start...]), as: UTF8.self)) }
        let lang = stmt.isNull(6) ? nil : languages.value(stmt.bytes(6)) { LanguageTag($0) }
        // The environment and token kind are read on APNs rows only (a migrated registry's
        // default environment covers every row); an unknown stored kind reads as `device`.
        var environment: APNsEnvironment?, kind = APNsTokenKind.device
        if platform == .apns {
            if !stmt.isNull(8) { environment = environments.value(stmt.bytes(8)) { APNsEnvironment(name: $0) } }
            kind = tokenKinds.value(stmt.bytes(9)) { APNsTokenKind(rawValue: $0) } ?? .device
        }
        return Device(id: stmt.text(1), platform: platform, handle: stmt.text(3), tags: tags, lang: lang,
                      updatedAt: Date(timeIntervalSince1970: stmt.double(4)), app: apps.value(stmt.bytes(7)) { $0 } ?? "",
                      environment: environment, tokenKind: kind, tz: stmt.isNull(10) ? nil : stmt.text(10))
    }
}
