import Foundation
import Synchronization
import Testing
import PushspoolCore
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// Opening a registry made by the release before apps (SQLite schema 4, PostgreSQL schema 2:
/// the fixtures under Tests/Fixtures were written by that release's `pushspool import`) gives
/// every device the default app and the APNs provider's environment, in one transaction; an
/// interrupted migration leaves the old schema; two processes migrate once; a newer schema is
/// refused and never written.
@Suite struct RegistryAppsMigrationTests {
    static let fixtures = Paths.packageRoot.appendingPathComponent("Tests/Fixtures")
    static let ids = ["android-carol", "android-dave", "ios-alice", "ios-bob", "web-frank", "win-erin"]
    static let defaults = RegistryDefaults(app: "chat", environment: .development, apps: ["chat", "shop"])

    /// A copy of the SQLite fixture in a fresh folder.
    static func sqliteCopy() throws -> (TempDir, String) {
        let dir = TempDir("registry-apps")
        let path = dir.path("registry.sqlite")
        try FileManager.default.copyItem(atPath: fixtures.appendingPathComponent("registry-v4.sqlite").path, toPath: path)
        return (dir, path)
    }

    static func userVersion(_ path: String) throws -> Int {
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        let stmt = try db.statement("PRAGMA user_version")
        defer { stmt.reset() }
        return try stmt.step() ? Int(stmt.int64(0)) : -1
    }

    /// Every device kept, each in the default app, APNs devices in the provider's environment.
    static func expectMigrated(_ registry: any DeviceRegistry) throws {
        var seen: [Device] = []
        try registry.forEach(platforms: Set(Platform.allCases), apps: ["chat"], matching: nil) { seen.append($0); return true }
        #expect(seen.map(\.id).sorted() == ids)
        #expect(seen.allSatisfy { $0.app == "chat" })
        #expect(seen.filter { $0.platform == .apns }.allSatisfy { $0.environment == .development })
        #expect(seen.filter { $0.platform != .apns }.allSatisfy { $0.environment == nil })
        #expect(try registry.count(platforms: Set(Platform.allCases), apps: ["shop"], matching: nil) == 0)
        let alice = try #require(try registry.device(id: "ios-alice"))
        #expect(alice.tags == ["follows_RedSox", "username:alice"])
        #expect(alice.lang?.value == "fr")
        // Reachable as the default app by handle too, and a tag audience still finds its devices.
        #expect(try registry.device(handle: alice.handle)?.id == "ios-alice")
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: .tag("follows_RedSox")) == 2)
    }

    @Test func sqliteRegistryOfTheLastReleaseMigrates() throws {
        let (dir, path) = try Self.sqliteCopy()
        _ = dir
        #expect(try Self.userVersion(path) == 4)
        let registry = try SQLiteRegistry(path: path, defaults: Self.defaults)
        defer { registry.close() }
        #expect(registry.foundVersion == 4)
        #expect(try Self.userVersion(path) == SQLiteRegistry.schemaVersion)
        try Self.expectMigrated(registry)
        // After the migration a handle is unique per app and platform: the same token in
        // another app is another device.
        let alice = try #require(try registry.device(id: "ios-alice"))
        let other = try registry.upsert(Registration(id: "shop-alice", platform: .apns, handle: alice.handle, tags: [], app: "shop"))
        #expect(other.app == "shop" && other.environment == .development)
        #expect(try registry.device(id: "ios-alice") != nil)
        #expect(try registry.device(handle: alice.handle, app: "shop")?.id == "shop-alice")
    }

    @Test(.enabled(if: PostgresCluster.binDirectory != nil)) func postgresRegistryOfTheLastReleaseMigrates() throws {
        let uri = try RegistryFixture.postgresDatabase()
        let load = try PostgresCluster.run(asUser: nil, ["/usr/bin/env", "psql", "-v", "ON_ERROR_STOP=1", "-q", uri,
                                                          "-f", Self.fixtures.appendingPathComponent("registry-v2.sql").path])
        try #require(load.status == 0, "\(load.output)")
        let registry = try PostgresRegistry(uri: uri, defaults: Self.defaults)
        defer { registry.close() }
        try Self.expectMigrated(registry)
        let c = try PostgresConnection(uri: uri)
        defer { c.close() }
        #expect(try PostgresSchema.currentVersion(c) == PostgresSchema.version)
    }

    @Test func twoProcessesMigrateOnce() throws {
        let spool = try initializedSpool("registry-apps-two")
        let registryPath = spool.dir.path("spool/registry.sqlite")
        try FileManager.default.removeItem(atPath: registryPath)
        try FileManager.default.copyItem(atPath: Self.fixtures.appendingPathComponent("registry-v4.sqlite").path, toPath: registryPath)
        let results = Mutex<[RunResult]>([])
        let args = ["registry", "migrate"] + spool.spool
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            if let r = try? runPushspool(args) { results.withLock { $0.append(r) } }
        }
        let runs = results.withLock { $0 }
        #expect(runs.count == 2 && runs.allSatisfy { $0.status == 0 }, "\(runs)")
        #expect(runs.filter { $0.stdout.contains("migrated from version 4 to \(SQLiteRegistry.schemaVersion)") }.count == 1, "\(runs.map(\.stdout))")
        #expect(runs.filter { $0.stdout.contains("nothing to migrate") }.count == 1, "\(runs.map(\.stdout))")
        let registry = try SQLiteRegistry(path: registryPath)
        defer { registry.close() }
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: nil) == Self.ids.count)
    }

    @Test func aNewerSchemaIsRefusedWithExit78AndNeverWritten() throws {
        let spool = try initializedSpool("registry-apps-newer")
        let registryPath = spool.dir.path("spool/registry.sqlite")
        let db = try SQLiteDatabase(path: registryPath)
        try db.execute("PRAGMA user_version = \(SQLiteRegistry.schemaVersion + 1)")
        db.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: registryPath))
        let r = try runPushspool(["register", "--platform", "fcm", "--handle", "tok", "--tag", "t"] + spool.spool)
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains("is newer than this pushspool supports"), "\(r.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: registryPath)) == before)
    }

    /// A version 4 registry of `count` devices, written directly (the last release's schema).
    static func makeVersion4(at path: String, count: Int) throws {
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        try db.execute("PRAGMA page_size = 16384; PRAGMA journal_mode = WAL;")
        try db.execute(SQLiteRegistry.tables + SQLiteRegistry.untagTrigger + SQLiteRegistry.reservationsTable + """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count))
            INSERT INTO devices(rowid, id, platform, handle, updated_at, tags)
                SELECT i, 'd' || i, 'apns', printf('%064x', i), 1, ' t ' FROM n;
            INSERT INTO device_tags(tag, device_rowid) SELECT 't', rowid FROM devices;
            \(SQLiteRegistry.indexesBeforeApps)
            PRAGMA user_version = 4;
            """)
    }

    /// kill -9 while a million-device registry migrates: the old schema is intact, and the next
    /// open migrates it whole.
    @Test func aMigrationKilledMidwayLeavesTheOldSchemaAndIsRetried() throws {
        let spool = try initializedSpool("registry-apps-kill")
        let registryPath = spool.dir.path("spool/registry.sqlite")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: registryPath + suffix) }
        try Self.makeVersion4(at: registryPath, count: 1_000_000)
        let process = try startPushspool(["registry", "migrate"] + spool.spool)
        // Killed once the migration is writing (its WAL grows past a few pages), or at once if
        // it never does before it ends.
        var killed = false
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline {
            var st = stat()
            if stat(registryPath + "-wal", &st) == 0, st.st_size > 2 << 20 {
                kill(process.processIdentifier, SIGKILL)
                killed = true
                break
            }
            usleep(2000)
        }
        process.waitUntilExit()
        try #require(killed, "the migration ended before it could be killed")
        #expect(process.terminationReason == .uncaughtSignal)
        // The old schema, intact: version 4, no app column.
        #expect(try Self.userVersion(registryPath) == 4)
        let db = try SQLiteDatabase(path: registryPath)
        let columns = try db.statement("SELECT count(*) FROM pragma_table_info('devices') WHERE name = 'app'")
        _ = try columns.step()
        #expect(columns.int64(0) == 0)
        columns.reset()
        db.close()
        // Retried on the next open, whole.
        let registry = try SQLiteRegistry(path: registryPath)
        defer { registry.close() }
        #expect(registry.foundVersion == 4)
        #expect(try registry.count(platforms: [.apns], apps: [AppConfig.implicitID], matching: .tag("t")) == 1_000_000)
        #expect(try registry.device(id: "d77")?.environment == .production)
    }
}
