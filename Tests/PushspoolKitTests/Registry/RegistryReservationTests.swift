import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// The reservation contract, on both backends: ids handed out before their device registers.
@Suite struct RegistryReservationTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test(arguments: RegistryBackend.allCases) func reserveReadReplaceRelease(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        #expect(try registry.reservation(id: "r1") == nil)
        try registry.reserve(id: "r1", owner: "alice", now: Self.t0)
        #expect(try registry.reservation(id: "r1") == IDReservation(owner: "alice", at: Self.t0))
        try registry.reserve(id: "r1", owner: "bob", now: Self.t0.addingTimeInterval(5))
        #expect(try registry.reservation(id: "r1") == IDReservation(owner: "bob", at: Self.t0.addingTimeInterval(5)))
        try registry.releaseReservation(id: "r1")
        #expect(try registry.reservation(id: "r1") == nil)
        try registry.releaseReservation(id: "never")
    }

    @Test(arguments: RegistryBackend.allCases) func anUpsertConsumesIt(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        try registry.reserve(id: "r1", owner: "alice", now: Self.t0)
        try registry.reserve(id: "r2", owner: "alice", now: Self.t0)
        try registry.upsert(RegistryFixture.reg("r1", .fcm, "t1"), now: Self.t0)
        _ = try registry.upsertReportingMove(RegistryFixture.reg("r2", .fcm, "t2"), now: Self.t0)
        #expect(try registry.reservation(id: "r1") == nil)
        #expect(try registry.reservation(id: "r2") == nil)
    }

    /// Reservations older than the lifetime are deleted by a later reservation (at most once a
    /// minute per process); younger ones stay.
    @Test(arguments: RegistryBackend.allCases) func oldReservationsArePurged(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        defer { registry.close() }
        try registry.reserve(id: "old", owner: "a", now: Self.t0)
        try registry.reserve(id: "young", owner: "a", now: Self.t0.addingTimeInterval(IDReservation.lifetime / 2))
        let later = Self.t0.addingTimeInterval(IDReservation.lifetime + 10)
        try registry.reserve(id: "new", owner: "a", now: later)
        #expect(try registry.reservation(id: "old") == nil)
        #expect(try registry.reservation(id: "young") != nil)
        #expect(try registry.reservation(id: "new") != nil)
    }

    /// Two registry handles on one database (two `serve` processes or hosts) share reservations.
    @Test(arguments: RegistryBackend.allCases) func sharedByEveryProcess(backend: RegistryBackend) throws {
        let (dir, first) = try RegistryFixture.make(on: backend)
        defer { first.close() }
        let second: any DeviceRegistry = switch backend {
        case .sqlite: try SQLiteRegistry(path: dir.path("registry.sqlite"))
        case .postgres: try PostgresRegistry(uri: (first as! PostgresRegistry).pool.uri)
        }
        defer { second.close() }
        try first.reserve(id: "shared", owner: "alice", now: Self.t0)
        #expect(try second.reservation(id: "shared")?.owner == "alice")
        try second.upsert(RegistryFixture.reg("shared", .fcm, "t"), now: Self.t0)
        #expect(try first.reservation(id: "shared") == nil)
    }

    /// A version 3 registry (before reservations) migrates in place, its devices kept.
    @Test func sqliteMigratesFromVersion3() throws {
        let dir = TempDir("registry")
        let path = dir.path("registry.sqlite")
        let db = try SQLiteDatabase(path: path)
        try db.execute(SQLiteRegistry.tables + SQLiteRegistry.indexesBeforeApps + SQLiteRegistry.untagTrigger + """
            INSERT INTO devices(id, platform, handle, updated_at, tags) VALUES('d1', 'fcm', 'h1', 1, ' t ');
            INSERT INTO device_tags(tag, device_rowid) VALUES('t', 1);
            PRAGMA user_version = 3;
            """)
        db.close()
        let registry = try SQLiteRegistry(path: path)
        defer { registry.close() }
        #expect(try registry.device(id: "d1")?.tags == ["t"])
        try registry.reserve(id: "r", owner: "o", now: Self.t0)
        #expect(try registry.reservation(id: "r")?.owner == "o")
        #expect(try registry.locked { db in
            let s = try db.statement("PRAGMA user_version")
            defer { s.reset() }
            return try s.step() ? Int(s.int64(0)) : 0
        } == SQLiteRegistry.schemaVersion)
    }
}
