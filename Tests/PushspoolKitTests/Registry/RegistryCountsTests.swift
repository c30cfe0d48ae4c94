import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// `device_counts` (schema 10): an audience without a tag expression is counted from it, so it
/// must hold what the rows hold after every kind of write, the bulk load's included.
@Suite struct RegistryCountsTests {
    static let defaults = RegistryDefaults(app: "chat", environment: .development, apps: ["chat", "shop"])

    /// The stored counts (rows of 0 left out) and the same counted from the devices themselves.
    static func counts(_ registry: SQLiteRegistry) throws -> (stored: [String], rows: [String]) {
        try registry.locked { db in
            func read(_ sql: String) throws -> [String] {
                let stmt = try db.statement(sql)
                defer { stmt.reset() }
                var out: [String] = []
                while try stmt.step() { out.append("\(stmt.text(0))|\(stmt.text(1))|\(stmt.text(2))|\(stmt.int64(3))") }
                return out
            }
            return (try read("SELECT app, platform, token_kind, total FROM device_counts WHERE total <> 0 ORDER BY 1, 2, 3"),
                    try read("SELECT app, platform, token_kind, count(*) FROM devices GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"))
        }
    }

    /// Every audience shape `count` answers from the stored counts, against the same audience
    /// counted by reading its devices (a tag every device carries forces the row count).
    static func expectSameAudiences(_ registry: SQLiteRegistry, everyDeviceTag tag: String,
                                    sourceLocation: SourceLocation = #_sourceLocation) throws {
        let platformSets: [Set<Platform>] = [Set(Platform.allCases), [.apns], [.apns, .fcm], [.fcm, .wns]]
        let appSets: [Set<String>?] = [nil, ["chat"], ["shop"], ["chat", "shop"], ["gone"]]
        let kinds: [APNsTokenKind?] = [nil, .device, .voip, .liveactivity]
        for platforms in platformSets {
            for apps in appSets {
                for kind in kinds {
                    let tallied = try registry.count(platforms: platforms, apps: apps, tokenKind: kind, matching: nil)
                    let read = try registry.count(platforms: platforms, apps: apps, tokenKind: kind, matching: .tag(tag))
                    #expect(tallied == read, "\(platforms.sorted()) \(apps?.sorted() ?? []) \(kind?.rawValue ?? "-")",
                            sourceLocation: sourceLocation)
                }
            }
        }
    }

    @Test func countsFollowEveryWrite() throws {
        let dir = TempDir("registry-counts")
        let registry = try SQLiteRegistry(path: dir.path("registry.sqlite"), defaults: Self.defaults)
        defer { registry.close() }
        func reg(_ id: String?, _ platform: Platform, _ handle: String, app: String? = nil, kind: APNsTokenKind? = nil) -> Registration {
            Registration(id: id, platform: platform, handle: handle, tags: ["all"], app: app, tokenKind: kind)
        }
        let token = { (i: Int) in String(format: "%064x", i) }
        try registry.upsert(reg("a", .apns, token(1)))
        try registry.upsert(reg("b", .apns, token(2), kind: .voip))
        try registry.upsert(reg("c", .fcm, "f1", app: "shop"))
        try registry.upsert(reg("d", .wns, "https://db5.notify.windows.com/?t=1"))
        try registry.upsert(reg("e", .apns, token(3), app: "shop", kind: .liveactivity))
        #expect(try Self.counts(registry).stored == Self.counts(registry).rows)
        try registry.upsert(reg("a", .apns, token(1), kind: .voip))            // token kind changes
        try registry.upsert(reg("c", .fcm, "f1"))                               // app changes
        try registry.upsert(reg("d", .fcm, "f2"))                               // platform changes
        try registry.upsert(reg("z", .apns, token(2), kind: .voip))            // the handle moves from b to z
        try registry.upsert(reg("a", .apns, token(1), kind: .voip))            // nothing changes
        #expect(try Self.counts(registry).stored == Self.counts(registry).rows)
        try Self.expectSameAudiences(registry, everyDeviceTag: "all")
        try registry.remove(id: "e")
        try registry.remove(handle: "f1", app: "chat")
        try registry.removeGone(id: "z", handle: token(2), since: nil)
        _ = try registry.replaceHandle(HandleChange(id: "d", handle: "f2", canonical: "f3"), now: Date())
        #expect(try Self.counts(registry).stored == Self.counts(registry).rows)
        #expect(try Self.counts(registry).rows == ["chat|apns|voip|1", "chat|fcm|device|1"])
        try Self.expectSameAudiences(registry, everyDeviceTag: "all")
    }

    /// The bulk load writes its own counts (its triggers dropped while it appends); a file that
    /// names an id twice falls back to the line-by-line import, whose triggers count.
    @Test(arguments: [false, true]) func bulkLoadCountsWhatItWrote(withDuplicates: Bool) throws {
        let dir = TempDir("registry-counts")
        var lines: [String] = []
        for i in 0..<2000 {
            let p = ["apns", "fcm", "gcm", "wns"][i % 4]
            let handle = p == "apns" ? String(format: "%064x", i) : p == "wns" ? "https://db5.notify.windows.com/?t=\(i)" : "h-\(i)"
            // Some name the default app themselves: counted apart from the lines naming none, added up.
            let app = i % 3 == 0 ? #","app":"shop""# : i % 7 == 0 ? #","app":"chat""# : ""
            let kind = p == "apns" && i % 5 == 0 ? #","token_kind":"voip""# : ""
            lines.append(#"{"id":"d\#(i)","platform":"\#(p)","handle":"\#(handle)","tags":["all","u\#(i)"]\#(app)\#(kind)}"#)
        }
        if withDuplicates { lines.append(#"{"id":"d5","platform":"fcm","handle":"h-5","tags":["all"]}"#) }
        dir.write("devices.jsonl", lines.joined(separator: "\n"))
        let registry = try SQLiteRegistry(path: dir.path("registry.sqlite"), defaults: Self.defaults)
        defer { registry.close() }
        #expect(try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("devices.jsonl")).imported == lines.count)
        let counts = try Self.counts(registry)
        #expect(counts.stored == counts.rows)
        #expect(counts.rows.count > 6, "\(counts.rows)")
        try Self.expectSameAudiences(registry, everyDeviceTag: "all")
        // The triggers are back after the bulk load.
        try registry.upsert(Registration(id: "new", platform: .apns, handle: String(format: "%064x", 99_999), tags: ["all"]))
        try registry.remove(id: "d1")
        #expect(try Self.counts(registry).stored == Self.counts(registry).rows)
    }

    /// A registry of schema 9 gets its counts from its rows when opened.
    @Test func migrationCountsTheRowsThere() throws {
        let dir = TempDir("registry-counts")
        let path = dir.path("registry.sqlite")
        let registry = try SQLiteRegistry(path: path, defaults: Self.defaults)
        try registry.upsert(Registration(id: "a", platform: .apns, handle: String(format: "%064x", 1), tags: ["all"], tokenKind: .voip))
        try registry.upsert(Registration(id: "b", platform: .fcm, handle: "f", tags: ["all"], app: "shop"))
        registry.close()
        let db = try SQLiteDatabase(path: path)
        try db.execute(SQLiteRegistry.dropCountTriggers + "DROP TABLE device_counts; PRAGMA user_version = 9;")
        db.close()
        let reopened = try SQLiteRegistry(path: path, defaults: Self.defaults)
        defer { reopened.close() }
        #expect(reopened.foundVersion == 9)
        #expect(try Self.counts(reopened).stored == ["chat|apns|voip|1", "shop|fcm|device|1"])
        try Self.expectSameAudiences(reopened, everyDeviceTag: "all")
    }
}
