import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// Schema 3: tag lists on the rows, the tag index kept in step by code and trigger, the bulk
/// load into an empty registry, and the fast line decoder, each checked against the slow path.
@Suite struct RegistrySchemaTests {
    /// Every device with its stored tag list, and every tag index row, for comparing registries.
    static func snapshot(_ registry: SQLiteRegistry) throws -> (devices: [String], index: [String]) {
        try registry.locked { db in
            var devices: [String] = []
            let d = try db.statement("SELECT id, platform, handle, lang, tags FROM devices ORDER BY id")
            while try d.step() { devices.append([d.text(0), d.text(1), d.text(2), d.isNull(3) ? "-" : d.text(3), d.text(4)].joined(separator: "|")) }
            d.reset()
            var index: [String] = []
            let t = try db.statement("SELECT x.tag, d.id FROM device_tags x JOIN devices d ON d.rowid = x.device_rowid ORDER BY 1, 2")
            while try t.step() { index.append(t.text(0) + "|" + t.text(1)) }
            t.reset()
            let orphans = try db.statement("SELECT count(*) FROM device_tags WHERE device_rowid NOT IN (SELECT rowid FROM devices)")
            _ = try orphans.step()
            #expect(orphans.int64(0) == 0, "tag index rows of deleted devices")
            orphans.reset()
            return (devices, index)
        }
    }

    @Test func tagIndexFollowsUpsertsMovesAndDeletes() throws {
        let (_, registry) = try RegistryFixture.make()
        try registry.upsert(RegistryFixture.reg("a", .apns, "h1", ["x", "y"]))
        try registry.upsert(RegistryFixture.reg("b", .fcm, "h2", ["y"]))
        try registry.upsert(RegistryFixture.reg("a", .apns, "h1", ["y", "z"]))    // x out, z in
        try registry.upsert(RegistryFixture.reg("c", .fcm, "h2", ["w"]))          // h2 moves from b to c
        #expect(try Self.snapshot(registry).index == ["w|c", "y|a", "z|a"])
        #expect(try registry.device(id: "a")?.tags == ["y", "z"])
        try registry.remove(id: "a")
        #expect(try Self.snapshot(registry).index == ["w|c"])
        try registry.removeGone(id: "c", handle: "h2", since: nil)
        #expect(try Self.snapshot(registry).index.isEmpty)
    }

    @Test func migratesAVersion2RegistryKeepingTagsAndLanguages() throws {
        let dir = TempDir("registry")
        let path = dir.path("v2.sqlite")
        let old = try SQLiteDatabase(path: path)
        try old.execute("""
            PRAGMA foreign_keys = ON;
            CREATE TABLE devices(rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, platform TEXT NOT NULL,
                handle TEXT NOT NULL UNIQUE, updated_at REAL NOT NULL, lang TEXT);
            CREATE TABLE device_tags(device_rowid INTEGER NOT NULL REFERENCES devices(rowid) ON DELETE CASCADE,
                tag TEXT NOT NULL, PRIMARY KEY(tag, device_rowid)) WITHOUT ROWID;
            CREATE INDEX device_tags_by_device ON device_tags(device_rowid);
            INSERT INTO devices(rowid, id, platform, handle, updated_at, lang) VALUES(5, 'a', 'apns', 'h1', 1, 'pt-BR'), (9, 'b', 'wns', 'h2', 2, NULL);
            INSERT INTO device_tags VALUES(5, 'username:alice'), (5, 'beta'), (9, 'username:bob');
            PRAGMA user_version = 2;
            """)
        old.close()
        let registry = try SQLiteRegistry(path: path)
        #expect(try registry.device(id: "a")?.tags == ["beta", "username:alice"])
        #expect(try registry.device(id: "a")?.lang == LanguageTag("pt-BR"))
        #expect(try registry.device(id: "b")?.tags == ["username:bob"])
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: .tag("username:alice")) == 1)
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: try TagExpression.parse("beta || username:bob")) == 2)
        try registry.remove(id: "a")
        #expect(try Self.snapshot(registry).index == ["username:bob|b"])
        registry.close()
    }

    /// The same file through the bulk load (empty registry) and the line-by-line upsert (a
    /// registry with one unrelated device, removed afterwards) gives the same registry.
    @Test(arguments: [false, true]) func bulkLoadEqualsLineByLine(withDuplicates: Bool) throws {
        let dir = TempDir("registry")
        var lines: [String] = []
        for i in 0..<3000 {
            let p = ["apns", "fcm", "gcm", "wns"][i % 4]
            let lang = i % 5 == 0 ? #","lang":"pt-br""# : ""
            let handle = p == "apns" ? String(format: "%064x", i) : p == "wns" ? "https://db5.notify.windows.com/?t=\(i)" : "h-\(i)"
            lines.append(#"{"id":"d\#(i)","platform":"\#(p)","handle":"\#(handle)","tags":["t\#(i % 7)","u\#(i)","t\#(i % 7)"]\#(lang)}"#)
        }
        lines.append(#"{"platform":"fcm","handle":"anonymous","tags":[]}"#)
        if withDuplicates {
            lines.append(#"{"id":"d5","platform":"fcm","handle":"h-5","tags":["again"]}"#)        // same id again
            lines.append(#"{"id":"moved","platform":"fcm","handle":"h-6","tags":["moved"]}"#)     // a handle moves
        }
        dir.write("devices.jsonl", lines.joined(separator: "\n"))
        let file = dir.url.appendingPathComponent("devices.jsonl")

        let bulk = try SQLiteRegistry(path: dir.path("bulk.sqlite"))
        #expect(try bulk.importJSONL(contentsOf: file).imported == lines.count)
        let rows = try SQLiteRegistry(path: dir.path("rows.sqlite"))
        try rows.upsert(RegistryFixture.reg("placeholder", .apns, "ph", ["p"]))
        #expect(try rows.importJSONL(contentsOf: file).imported == lines.count)
        try rows.remove(id: "placeholder")

        func withoutGeneratedID(_ s: (devices: [String], index: [String])) -> (devices: [String], index: [String]) {
            // The anonymous line gets a fresh UUID each time.
            (s.devices.map { $0.contains("|anonymous|") ? "uuid|fcm|anonymous|-| " : $0 }.sorted(),
             s.index)
        }
        let a = withoutGeneratedID(try Self.snapshot(bulk)), b = withoutGeneratedID(try Self.snapshot(rows))
        #expect(a.devices.count == b.devices.count)
        #expect(a.devices.count == (withDuplicates ? 3001 : 3001), "\(a.devices.count)")
        #expect(a.devices.elementsEqual(b.devices), "first difference: \(zip(a.devices, b.devices).first { $0 != $1 }.map { "\($0)" } ?? "-")")
        #expect(a.index.elementsEqual(b.index), "\(a.index.count) vs \(b.index.count)")
        if withDuplicates {
            #expect(try bulk.device(id: "d5")?.tags == ["again"])
            #expect(try bulk.device(id: "d6") == nil)
            #expect(try bulk.device(id: "moved")?.handle == "h-6")
        }
        // The indexes exist after the bulk load: importing the same file again changes nothing
        // (the anonymous line finds its handle and keeps that device's id).
        #expect(try bulk.importJSONL(contentsOf: file).imported == lines.count)
        #expect(try Self.snapshot(bulk).devices == (try Self.snapshot(bulk)).devices)
        #expect(try Self.snapshot(bulk).devices.count == 3001)
        bulk.close()
        rows.close()
    }

    /// The fast decoder accepts only what the general path accepts, and decodes it the same.
    @Test func fastLineDecoderAgreesWithTheGeneralPath() throws {
        let lines = [
            #"{"id":"a","platform":"apns","handle":"\#(String(repeating: "a0", count: 32))","tags":["username:alice","x"],"lang":"pt-br"}"#,
            #"  { "platform" : "gcm" , "handle":"t","tags":[ ] }  "#,
            #"{"tags":["a"],"handle":"h","platform":"wns","id":"w"}"#,
            #"{"id":"a\"b","platform":"apns","handle":"h","tags":[]}"#,         // escape: general path
            #"{"id":"ä","platform":"apns","handle":"h","tags":[]}"#,             // non-ASCII: general path
            #"{"id":null,"platform":"apns","handle":"h","tags":[]}"#,            // null: general path
            #"{"id":"a","id":"b","platform":"apns","handle":"h","tags":[]}"#,    // repeated field
            #"{"platform":"ios","handle":"h","tags":[]}"#,                         // invalid: general path's error
            #"{"platform":"apns","handle":"h","tags":["bad tag"]}"#,
            #"{"platform":"apns","handle":"h","tags":[],"extra":1}"#,
            #"{"platform":"apns","handle":"h","tags":[]} x"#,
            #"{"platform":"apns","handle":"h"}"#,
            #"{"platform":"apns","handle":"h","tags":["a",]}"#,
            #"{"platform":"apns","handle":"h","tags":[],"lang":"english!"}"#,
        ]
        var fast = RegistrationLine()
        for line in lines {
            let general = Result { () throws(RegistryError) in try RegistrationFile.registration(fromJSONLine: Array(line.utf8)) }
            if let quick = fast.decode(Array(line.utf8)) {
                #expect(try general.get() == quick, "\(line)")
            } else {
                // Not taken by the fast path: either an error or something only the general path reads.
                _ = general
            }
        }
        #expect(fast.decode(Array(lines[0].utf8)) != nil)
        #expect(fast.decode(Array(lines[3].utf8)) == nil)
        #expect(fast.decode(Array(lines[7].utf8)) == nil)
    }
}
