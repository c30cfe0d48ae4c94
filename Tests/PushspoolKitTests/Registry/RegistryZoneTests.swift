import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// `tz` in the registry: stored by upsert and by both import paths, read back, grouped by the
/// database (`zoneCounts`), on both backends.
@Suite struct RegistryZoneTests {
    static let token = String(repeating: "cd", count: 32)

    @Test(arguments: RegistryBackend.allCases) func upsertKeepsTheZone(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        var r = RegistryFixture.reg("k", .fcm, "tok-k")
        r.tz = "Asia/Kolkata"
        #expect(try registry.upsert(r).tz == "Asia/Kolkata")
        #expect(try registry.device(id: "k")?.tz == "Asia/Kolkata")
        r.tz = nil
        try registry.upsert(r)
        #expect(try registry.device(id: "k")?.tz == nil)
    }

    /// The fast path (plain lines), the general path (an escape) and a refused zone, into an
    /// empty registry (bulk load) and into one that has devices (line by line).
    @Test(arguments: RegistryBackend.allCases, [true, false])
    func importTakesZones(backend: RegistryBackend, startEmpty: Bool) throws {
        let (dir, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        if !startEmpty { try registry.upsert(RegistryFixture.reg("old", .fcm, "old-token")) }
        dir.write("devices.jsonl", """
            {"id":"a","platform":"fcm","handle":"t-a","tags":[],"tz":"Asia/Kathmandu"}
            {"id":"b","platform":"apns","handle":"\(Self.token)","tags":["x"],"tz":"Europe/Paris","lang":"fr"}
            {"id":"c","platform":"fcm","handle":"t-c","tags":[],"tz":"Europe\\/Paris"}
            {"id":"d","platform":"fcm","handle":"t-d","tags":[]}
            {"id":"e","platform":"fcm","handle":"t-e","tags":[],"tz":"Mars/Base"}
            """)
        let report = try registry.importJSONL(contentsOf: dir.url.appendingPathComponent("devices.jsonl"))
        #expect(report.imported == 4)
        #expect(report.refused == [#"line 5: tz: unknown time zone "Mars/Base" (an IANA zone name such as "Europe/Paris")"#])
        #expect(try registry.device(id: "a")?.tz == "Asia/Kathmandu")
        #expect(try registry.device(id: "b")?.tz == "Europe/Paris")
        #expect(try registry.device(id: "c")?.tz == "Europe/Paris")
        #expect(try registry.device(id: "d")?.tz == nil)
        let counts = try registry.zoneCounts(platforms: Set(Platform.allCases), apps: nil, tokenKind: nil, matching: nil)
        let expected = [ZoneCount(app: "default", tz: "Asia/Kathmandu", devices: 1), ZoneCount(app: "default", tz: "Europe/Paris", devices: 2)]
        #expect(counts.filter { $0.tz != nil } == expected)
        #expect(counts.first { $0.tz == nil }?.devices == (startEmpty ? 1 : 2))
        // The audience's own conditions apply to the grouping too.
        #expect(try registry.zoneCounts(platforms: [.apns], apps: nil, tokenKind: nil, matching: .tag("x")) == [ZoneCount(app: "default", tz: "Europe/Paris", devices: 1)])
    }

    /// A wave reads one (app, tz) at a time: exactly those devices, in key order, the audience's
    /// tags and platforms applying.
    @Test(arguments: RegistryBackend.allCases) func forEachZoneReadsOnlyThatZone(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        for (i, tz) in ["Asia/Kolkata", "Europe/Paris", nil, "Asia/Kolkata", nil].enumerated() {
            var r = RegistryFixture.reg("z\(i)", .fcm, "tok-z\(i)", i == 3 ? ["vip"] : [])
            r.tz = tz
            try registry.upsert(r)
        }
        func ids(_ tz: String?, _ matching: TagExpression? = nil) throws -> [String] {
            var seen: [String] = []
            try registry.forEach(platforms: [.fcm], zone: ZoneKey(app: "default", tz: tz), tokenKind: nil, matching: matching, pageSize: 1, after: 0) { d, _ in
                seen.append(d.id)
                return true
            }
            return seen
        }
        #expect(try ids("Asia/Kolkata") == ["z0", "z3"])
        #expect(try ids(nil) == ["z2", "z4"])
        #expect(try ids("Asia/Kolkata", .tag("vip")) == ["z3"])
        #expect(try ids("Asia/Tokyo").isEmpty)
        var other: [String] = []
        try registry.forEach(platforms: [.fcm], zone: ZoneKey(app: "shop", tz: nil), tokenKind: nil, matching: nil, pageSize: 10, after: 0) { d, _ in
            other.append(d.id)
            return true
        }
        #expect(other.isEmpty)
    }
}
