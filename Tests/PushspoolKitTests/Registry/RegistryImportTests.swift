import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

@Suite struct RegistryImportTests {
    @Test(arguments: RegistryBackend.allCases) func importsEveryLineInOneGo(backend: RegistryBackend) throws {
        let (dir, registry) = try RegistryFixture.make(on: backend)
        dir.write("devices.jsonl", """
            {"id":"a","platform":"apns","handle":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","tags":["username:alice","follows_RedSox"]}

            {"platform":"gcm","handle":"fcm-token-1","tags":[]}\r
               \t
            {"id":"w","platform":"wns","handle":"https://db5.notify.windows.com/?token=x","tags":["username:bob"]}
            {"id":"a","platform":"apns","handle":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","tags":["username:alice"]}
            """)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let n = try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("devices.jsonl"), now: now)
        #expect(n.imported == 4 && n.refusedCount == 0)
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: nil) == 3)
        #expect(try registry.device(id: "a")?.tags == ["username:alice"])
        #expect(try registry.device(id: "w")?.updatedAt == now)
        #expect(try registry.count(platforms: [.fcm], matching: nil) == 1)
    }

    /// Bad lines are refused one by one, each named with its line and field; every good line is
    /// imported, into an empty registry (bulk load) or not (line by line).
    @Test(arguments: RegistryBackend.allCases, [false, true])
    func badLinesAreRefusedAndTheRestImported(backend: RegistryBackend, startEmpty: Bool) throws {
        let (dir, registry) = try RegistryFixture.make(on: backend)
        if !startEmpty { try registry.upsert(RegistryFixture.reg("keep", .fcm, "k1", ["before"])) }
        var lines = (0..<6).map { #"{"id":"n\#($0)","platform":"fcm","handle":"t\#($0)","tags":["x"]}"# }
        lines.append(#"{"id":"bad","platform":"ios","handle":"t9","tags":[]}"#)
        lines.append(#"{"id":"keep","platform":"fcm","handle":"k1","tags":["after"]}"#)
        lines.append(#"{"id":"worse","platform":"fcm","handle":"k2","tags":["a b"]}"#)
        lines.append(#"{"id":"short","platform":"apns","handle":"ab12","tags":[]}"#)
        dir.write("devices.jsonl", lines.joined(separator: "\n") + "\n")
        let report = try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("devices.jsonl"))
        #expect(report.imported == 7)
        #expect(report.refusedCount == 3)
        #expect(report.refused == [#"line 7: platform: unknown platform "ios" (expected apns, fcm, gcm, wns, web, hms, adm)"#,
                                   #"line 9: tags[0]: invalid tag "a b" (1-120 characters of A-Z a-z 0-9 _ @ # . : -)"#,
                                   "line 10: handle: an APNs device token must be an even number (64 or more) of hex digits"])
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: nil) == 7)
        #expect(try registry.device(id: "keep")?.tags == ["after"])
        #expect(try registry.device(id: "bad") == nil)
        // The connection is usable afterwards (the transaction was closed, not left open).
        try registry.upsert(RegistryFixture.reg("later", .wns, "w1"))
        #expect(try registry.count(platforms: [.wns], matching: nil) == 1)
    }

    /// One bad line after a good one → the message, with line 2 named.
    static let badLines: [(String, String)] = [
        (#"{"platform":"fcm","handle":"h"}"#, "tags: missing"),
        (#"{"handle":"h","tags":[]}"#, "platform: missing"),
        (#"{"platform":"fcm","tags":[]}"#, "handle: missing"),
        (#"{"platform":7,"handle":"h","tags":[]}"#, "platform: expected a string, got number"),
        (#"{"platform":"fcm","handle":null,"tags":[]}"#, "handle: expected a string, got null"),
        (#"{"id":1,"platform":"fcm","handle":"h","tags":[]}"#, "id: expected a string, got number"),
        (#"{"id":"","platform":"fcm","handle":"h","tags":[]}"#, "id: must not be empty"),
        (#"{"platform":"fcm","handle":"","tags":[]}"#, "handle: must not be empty"),
        (#"{"platform":"fcm","handle":"h","tags":"a"}"#, "tags: expected an array of strings, got string"),
        (#"{"platform":"fcm","handle":"h","tags":["a",3]}"#, "tags[1]: expected a string, got number"),
        (#"{"platform":"fcm","handle":"h","tags":["a b"]}"#,
         #"tags[0]: invalid tag "a b" (1-120 characters of A-Z a-z 0-9 _ @ # . : -)"#),
        (#"{"platform":"fcm","handle":"h","tags":[],"tag":"x"}"#, #"unknown field "tag""#),
        (#"["fcm","h"]"#, "expected a JSON object, got array"),
        (#"{"platform":"fcm","handle":"h","tags":[]"#, "invalid JSON at byte 40: truncated (ends inside an object)"),
        (#"{"platform":"fcm","platform":"fcm","handle":"h","tags":[]}"#, #"invalid JSON at byte 18: duplicate key "platform""#),
    ]

    @Test(arguments: RegistryBackend.allCases, badLines.indices)
    func namesTheLineAndField(backend: RegistryBackend, index: Int) throws {
        let (line, message) = Self.badLines[index]
        let (dir, registry) = try RegistryFixture.make(on: backend)
        dir.write("devices.jsonl", #"{"platform":"fcm","handle":"good","tags":["t"]}"# + "\n" + line + "\n")
        let report = try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("devices.jsonl"))
        #expect(report.refused == ["line 2: " + message])
        #expect(report.imported == 1)
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: nil) == 1)
    }

    @Test(arguments: RegistryBackend.allCases) func missingFileIsAnError(backend: RegistryBackend) throws {
        let (dir, registry) = try RegistryFixture.make(on: backend)
        let error = #expect(throws: RegistryError.self) {
            try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("absent.jsonl"))
        }
        #expect(error?.message.hasPrefix("cannot read ") == true)
    }

    @Test(arguments: RegistryBackend.allCases) func emptyFileImportsNothing(backend: RegistryBackend) throws {
        let (dir, registry) = try RegistryFixture.make(on: backend)
        dir.write("empty.jsonl", "\n\n")
        #expect(try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("empty.jsonl")).imported == 0)
    }

    @Test(arguments: RegistryBackend.allCases) func linesSpanningReadChunksAreReassembled(backend: RegistryBackend) throws {
        // 64 KiB chunks: 3000 lines of ~70 bytes cross several chunk boundaries mid-line.
        let (dir, registry) = try RegistryFixture.make(on: backend)
        let lines = (0..<3000).map { #"{"id":"i\#($0)","platform":"fcm","handle":"h\#($0)","tags":["t\#($0 % 7)"]}"# }
        dir.write("many.jsonl", lines.joined(separator: "\n"))   // no final newline
        #expect(try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("many.jsonl")).imported == 3000)
        #expect(try registry.count(platforms: [.fcm], matching: .tag("t3")) == 3000 / 7 + 1)
        #expect(try registry.device(id: "i2999")?.handle == "h2999")
    }

    /// The bulk load's byte-level fast path takes exactly what the line-by-line import takes and
    /// stores the same rows: an empty registry (bulk load) and a non-empty one (upserts) are fed
    /// the same file, fast-path lines mixed with lines only the general parser takes.
    @Test(arguments: RegistryBackend.allCases) func bulkLoadStoresWhatUpsertsStore(backend: RegistryBackend) throws {
        let hex = String(repeating: "ab", count: 32)
        var lines = [
            #"{"id":"plain","platform":"apns","handle":"\#(hex)","tags":["b","a","b","c"],"lang":"en"}"#,
            #"  {"tags":["z","y"] , "handle":"fcm-tok_1:x.y", "platform":"gcm","lang":"PT-br"}  "#,
            // A token in uppercase (as some apps print it) is stored lowercase: one device, one handle.
            #"{"id":"upper","platform":"apns","handle":"\#(String(repeating: "CD", count: 32))","tags":[]}"#,
            #"{"id":"esc","platform":"fcm","handle":"fcm-2","tags":["\u0041x","A"]}"#,
            #"{"id":"caf\u00e9","platform":"wns","handle":"https://db5.notify.windows.com/?token=1","tags":["t"],"lang":null}"#,
            #"{"id":"wns2","platform":"wns","handle":"https://h/p?token=2","tags":["username:u2","interest:2"],"lang":"de"}"#,
            #"{"id":"many","platform":"fcm","handle":"fcm-3","tags":[\#((0..<20).map { "\"t\($0)\"" }.joined(separator: ","))]}"#,
            #"{"id":"del\#u{7F}","platform":"fcm","handle":"fcm-4","tags":[]}"#,
            #"{"id":"at","platform":"wns","handle":"https://u@h/?token=3","tags":[]}"#,
            #"{"id":"odd","platform":"apns","handle":"\#(hex)a","tags":[]}"#,
            #"{"id":"longtag","platform":"fcm","handle":"fcm-5","tags":["\#(String(repeating: "x", count: 121))"]}"#,
            #"{"id":"badlang","platform":"fcm","handle":"fcm-6","tags":[],"lang":"e_n"}"#,
            #"{"id":"sp ace","platform":"fcm","handle":"fcm-7","tags":[]}"#,
            #"{"id":"","platform":"fcm","handle":"fcm-8","tags":[]}"#,
            #"{"id":"emptytag","platform":"fcm","handle":"fcm-9","tags":[""]}"#,
            #"{"id":"nohttps","platform":"wns","handle":"http://h/?token=4","tags":[]}"#,
        ]
        lines += (0..<5000).map { #"{"id":"n\#($0)","platform":"fcm","handle":"h\#($0)","tags":["t\#($0 % 7)","u\#($0)"]}"# }
        func load(empty: Bool) throws -> (ImportReport: RegistryImportReport, devices: [String: Device], generated: Int) {
            let (dir, registry) = try RegistryFixture.make(on: backend)
            if !empty { try registry.upsert(RegistryFixture.reg("sentinel", .fcm, "sentinel")) }
            dir.write("devices.jsonl", lines.joined(separator: "\n"))
            let now = Date(timeIntervalSince1970: 1_700_000_000)
            let report = try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("devices.jsonl"), now: now)
            var devices: [String: Device] = [:]
            var generated = 0
            try registry.forEach(platforms: Set(Platform.allCases), matching: nil) { d in
                if d.id == "sentinel" { return true }
                if d.id.count == 36, d.id.filter({ $0 == "-" }).count == 4 {
                    generated += 1
                    devices["uuid:" + d.handle] = Device(id: "", platform: d.platform, handle: d.handle, tags: d.tags, lang: d.lang, updatedAt: d.updatedAt)
                } else {
                    devices[d.id] = d
                }
                return true
            }
            // Every device on SQLite; every 50th on PostgreSQL (a round trip per query).
            for (i, key) in devices.keys.sorted().enumerated() where backend == .sqlite || i % 50 == 0 {
                let d = devices[key]!
                #expect(try registry.device(handle: d.handle)?.handle == d.handle)
                for t in d.tags { #expect(try registry.count(platforms: [d.platform], matching: .tag(t)) >= 1) }
            }
            return (report, devices, generated)
        }
        let bulk = try load(empty: true), upserted = try load(empty: false)
        #expect(bulk.ImportReport.refused == upserted.ImportReport.refused)
        #expect(bulk.ImportReport.imported == upserted.ImportReport.imported)
        #expect(bulk.ImportReport.refusedCount == 9, "\(bulk.ImportReport.refused)")
        #expect(bulk.generated == 1 && upserted.generated == 1)
        #expect(bulk.devices == upserted.devices)
        #expect(bulk.devices["plain"]?.tags == ["a", "b", "c"])
        #expect(bulk.devices["upper"]?.handle == String(repeating: "cd", count: 32))
        #expect(bulk.devices["uuid:fcm-tok_1:x.y"]?.lang?.value == "pt-BR")
        #expect(bulk.devices["esc"]?.tags == ["A", "Ax"])
        #expect(bulk.devices["many"]?.tags.count == 20)
        #expect(bulk.devices.count == lines.count - 9)
    }

    /// The bulk load pairs each tag with its device by the rowid the reading thread counted
    /// (1, 2, 3… over the accepted lines) while SQLite numbers the rows it appends: refused lines
    /// between good ones, lines of the general path and rows of several inserts still leave
    /// every tag on its own device.
    @Test func bulkLoadPairsEachTagWithItsDevice() throws {
        let (dir, registry) = try RegistryFixture.make()
        let lines = (0..<300).map { i -> String in
            if i % 9 == 4 { return #"{"id":"bad\#(i)","platform":"ios","handle":"h\#(i)","tags":["u\#(i)"]}"# }
            // An escaped id: only the general parser takes it.
            let id = i % 5 == 0 ? #"\u006e\#(i)"# : "n\(i)"
            return #"{"id":"\#(id)","platform":"fcm","handle":"h\#(i)","tags":["u\#(i)","g\#(i % 3)"]}"#
        }
        dir.write("devices.jsonl", lines.joined(separator: "\n"))
        let report = try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("devices.jsonl"))
        let good = (0..<300).filter { $0 % 9 != 4 }
        #expect(report.imported == good.count && report.refusedCount == 300 - good.count)
        for i in 0..<300 {
            var found: [String] = []
            try registry.forEach(platforms: [.fcm], matching: .tag("u\(i)")) { found.append($0.id); return true }
            #expect(found == (i % 9 == 4 ? [] : ["n\(i)"]), "u\(i)")
        }
        #expect(try registry.count(platforms: [.fcm], matching: .tag("g1")) == good.filter { $0 % 3 == 1 }.count)
    }

    /// The bulk load keeps a row's app, environment, token kind and zone bound from one insert
    /// to the next unless the row names them: lines naming some of them between lines naming
    /// none, in every position of a multi-row insert, store what the upsert path stores.
    @Test func bulkLoadStoresEachRowsOwnAppKindAndZone() throws {
        let defaults = RegistryDefaults(app: "main", environment: .production, apps: ["main", "other"], environments: ["other": .development])
        func token(_ i: Int) -> String { String(format: "%064lx", i) }
        let lines = (0..<70).map { i -> String in
            let (platform, handle) = i % 2 == 0 ? ("apns", token(i)) : ("fcm", "fcm-\(i)")
            let head = #"{"id":"d\#(i)","platform":"\#(platform)","handle":"\#(handle)","tags":["t"]"#
            switch (i / 2) % 5 {
            case 0 where i % 2 == 0: return head + #","token_kind":"voip","tz":"Europe/Paris"}"#
            case 1: return head + #","tz":"Asia/Kolkata"}"#
            case 2: return head + #","app":"other"}"#
            case 3 where i % 2 == 0: return head + #","app":"main","environment":"development"}"#
            default: return head + "}"
            }
        }
        func load(empty: Bool) throws -> [Device] {
            let dir = TempDir("registry")
            let registry = try SQLiteRegistry(path: dir.path("registry.sqlite"), defaults: defaults)
            defer { registry.close() }
            if !empty { try registry.upsert(RegistryFixture.reg("sentinel", .fcm, "sentinel")) }
            dir.write("devices.jsonl", lines.joined(separator: "\n"))
            let report = try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("devices.jsonl"),
                                                  now: Date(timeIntervalSince1970: 1_700_000_000))
            #expect(report.imported == lines.count && report.refused.isEmpty, "\(report.refused)")
            // Stored, not only read: an environment on APNs rows only (a read drops the others').
            let misplaced = try registry.locked { db in
                let s = try db.statement("SELECT count(*) FROM devices WHERE (platform = 'apns') = (environment IS NULL)")
                defer { s.reset() }
                return try s.step() ? s.int64(0) : -1
            }
            #expect(misplaced == 0)
            return try (0..<lines.count).map { try #require(try registry.device(id: "d\($0)")) }
        }
        let bulk = try load(empty: true), upserted = try load(empty: false)
        #expect(bulk == upserted)
        #expect(bulk[0].tokenKind == .voip && bulk[0].tz == "Europe/Paris" && bulk[0].environment == .production)
        #expect(bulk[2].tz == "Asia/Kolkata" && bulk[2].tokenKind == .device && bulk[2].app == "main")
        #expect(bulk[4].app == "other" && bulk[4].environment == .development)
        #expect(bulk[5].app == "other" && bulk[5].environment == nil)
        #expect(bulk[6].app == "main" && bulk[6].environment == .development)
        #expect(bulk[8].app == "main" && bulk[8].environment == .production && bulk[8].tz == nil && bulk[8].tokenKind == .device)
        #expect(bulk[10].tokenKind == .voip && bulk[12].tz == "Asia/Kolkata" && bulk[9].tz == nil)
    }

    /// Into a registry that already has devices: a line without an id keeps the id holding its
    /// handle, a line naming another id moves the handle there, a known id is updated in place.
    @Test(arguments: RegistryBackend.allCases) func importFollowsTheUpsertRulesOnAFilledRegistry(backend: RegistryBackend) throws {
        let (dir, registry) = try RegistryFixture.make(on: backend)
        try registry.upsert(RegistryFixture.reg("keeps", .fcm, "h1", ["old"]))
        try registry.upsert(RegistryFixture.reg("loses", .fcm, "h2", ["old"]))
        try registry.upsert(RegistryFixture.reg("updated", .fcm, "h3", ["old"]))
        try registry.upsert(RegistryFixture.reg("untouched", .fcm, "h4", ["old"]))
        dir.write("devices.jsonl", """
            {"platform":"fcm","handle":"h1","tags":["new"]}
            {"id":"gains","platform":"fcm","handle":"h2","tags":["new"]}
            {"id":"updated","platform":"wns","handle":"https://db5.notify.windows.com/?token=5","tags":["new"],"lang":"fr"}
            {"id":"fresh","platform":"fcm","handle":"h6","tags":["new"]}
            """)
        let now = Date(timeIntervalSince1970: 1_700_000_123)
        let report = try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("devices.jsonl"), now: now)
        #expect(report.imported == 4 && report.refusedCount == 0)
        #expect(try registry.device(id: "keeps")?.tags == ["new"])
        #expect(try registry.device(id: "loses") == nil)
        #expect(try registry.device(handle: "h2")?.id == "gains")
        let updated = try registry.device(id: "updated")
        #expect(updated?.platform == .wns && updated?.lang?.value == "fr" && updated?.updatedAt == now)
        #expect(try registry.device(handle: "h3") == nil)
        #expect(try registry.device(id: "untouched")?.tags == ["old"])
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: nil) == 5)
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: .tag("new")) == 4)
    }

    @Test(arguments: RegistryBackend.allCases) func aLineLongerThanTheReadBufferIsRead(backend: RegistryBackend) throws {
        let (dir, registry) = try RegistryFixture.make(on: backend)
        // 60 tags (as many as a device may have) and JSON whitespace: a line past the 64 KiB buffer.
        let tags = (0..<60).map { "\"tag\($0)\"" }.joined(separator: ",")
        let padding = String(repeating: " ", count: 80_000)
        dir.write("long.jsonl", #"{"id":"a","platform":"fcm",\#(padding)"handle":"h1","tags":[\#(tags)]}"# + "\n"
                  + #"{"id":"b","platform":"fcm","handle":"h2","tags":[]}"#)
        #expect(try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("long.jsonl")).imported == 2)
        #expect(try registry.device(id: "a")?.tags.count == 60)
        #expect(try registry.device(id: "b")?.handle == "h2")
    }
}
