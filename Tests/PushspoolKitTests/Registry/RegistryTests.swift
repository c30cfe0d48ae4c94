import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

@Suite struct RegistryTests {
    @Test func createsFolderAndFilePrivatelyInWALMode() throws {
        let dir = TempDir("registry")
        let path = dir.path("nested/deeper/registry.sqlite")
        let registry = try SQLiteRegistry(path: path)
        try registry.upsert(RegistryFixture.reg("a", .apns, "h1", ["t"]))
        let fileMode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        let folderMode = try FileManager.default.attributesOfItem(atPath: dir.path("nested/deeper"))[.posixPermissions] as? Int
        #expect(fileMode == 0o600)
        #expect(folderMode == 0o700)
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        let walMode = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.posixPermissions] as? Int
        #expect(walMode == 0o600)
        let journal = try registry.locked { db in
            let s = try db.statement("PRAGMA journal_mode")
            defer { s.reset() }
            return try s.step() ? s.text(0) : ""
        }
        #expect(journal == "wal")
        registry.close()

        let reopened = try SQLiteRegistry(path: path)
        #expect(try reopened.device(id: "a")?.handle == "h1")
    }

    @Test(arguments: RegistryBackend.allCases) func upsertStoresSortedDistinctTagsAndTimestamp(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        let now = Date(timeIntervalSince1970: 1_700_000_000.25)
        let stored = try registry.upsert(RegistryFixture.reg("inst-1", .fcm, "tok-1", ["z", "a", "m", "a"]), now: now)
        #expect(stored == Device(id: "inst-1", platform: .fcm, handle: "tok-1", tags: ["a", "m", "z"], updatedAt: now))
        #expect(try registry.device(id: "inst-1") == stored)
        #expect(try registry.device(id: "missing") == nil)
    }

    @Test(arguments: RegistryBackend.allCases) func deviceWithoutTagsReadsBackEmpty(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        try registry.upsert(RegistryFixture.reg("bare", .wns, "https://x.notify.windows.com/?token=1"))
        #expect(try registry.device(id: "bare")?.tags == [])
    }

    @Test(arguments: RegistryBackend.allCases) func generatedIDIsLowercaseUUIDAndReusedForTheSameHandle(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        let first = try registry.upsert(RegistryFixture.reg(nil, .apns, "aa11", ["x"]))
        #expect(UUID(uuidString: first.id) != nil)
        #expect(first.id == first.id.lowercased())
        let second = try registry.upsert(RegistryFixture.reg(nil, .apns, "aa11", ["y"]))
        #expect(second.id == first.id)
        #expect(try registry.device(id: first.id)?.tags == ["y"])
        let other = try registry.upsert(RegistryFixture.reg(nil, .apns, "bb22"))
        #expect(other.id != first.id)
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: nil) == 2)
    }

    @Test(arguments: RegistryBackend.allCases) func handleRegisteredUnderAnotherIDMoves(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        try registry.upsert(RegistryFixture.reg("old", .apns, "shared-token", ["username:alice"]))
        try registry.upsert(RegistryFixture.reg("new", .apns, "shared-token", ["username:bob"]))
        #expect(try registry.device(id: "old") == nil)
        #expect(try registry.device(id: "new")?.handle == "shared-token")
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: nil) == 1)
        #expect(try registry.count(platforms: [.apns], matching: .tag("username:alice")) == 0)
        #expect(try registry.count(platforms: [.apns], matching: .tag("username:bob")) == 1)
    }

    @Test(arguments: RegistryBackend.allCases) func handleMovesOntoAnExistingIDThatHadAnotherHandle(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        try registry.upsert(RegistryFixture.reg("a", .apns, "h-a", ["ta"]))
        try registry.upsert(RegistryFixture.reg("b", .apns, "h-b", ["tb"]))
        // A handle is unique per app and platform: the move happens within one platform.
        let moved = try registry.upsert(RegistryFixture.reg("b", .apns, "h-a", ["tc"]))
        #expect(moved.handle == "h-a")
        #expect(try registry.device(id: "a") == nil)
        #expect(try registry.device(id: "b") == moved)
        #expect(try registry.remove(handle: "h-b") == false)
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: nil) == 1)
    }

    @Test(arguments: RegistryBackend.allCases) func upsertReplacesTagsAndPlatform(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        try registry.upsert(RegistryFixture.reg("d", .apns, "h", ["one", "two"]), now: Date(timeIntervalSince1970: 10))
        try registry.upsert(RegistryFixture.reg("d", .wns, "h2", ["three"]), now: Date(timeIntervalSince1970: 20))
        let d = try #require(try registry.device(id: "d"))
        #expect(d.platform == .wns && d.handle == "h2" && d.tags == ["three"])
        #expect(d.updatedAt == Date(timeIntervalSince1970: 20))
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: .tag("one")) == 0)
    }

    @Test(arguments: RegistryBackend.allCases) func removeByIDAndByHandle(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        try registry.upsert(RegistryFixture.reg("a", .apns, "ha", ["t"]))
        try registry.upsert(RegistryFixture.reg("b", .fcm, "hb", ["t"]))
        #expect(try registry.remove(id: "a"))
        #expect(try !registry.remove(id: "a"))
        #expect(try registry.remove(handle: "hb"))
        #expect(try !registry.remove(handle: "hb"))
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: nil) == 0)
        // Tags went with their devices (the trigger): a re-registration starts clean.
        guard let registry = registry as? SQLiteRegistry else { return }
        let tagRows = try registry.locked { db in
            let s = try db.statement("SELECT count(*) FROM device_tags")
            defer { s.reset() }
            return try s.step() ? s.int64(0) : -1
        }
        #expect(tagRows == 0)
    }

    /// removeGone(id:handle:since:) against a device registered at t=1000.
    static let goneCases: [(String, String, String, Double?, Bool)] = [
        ("no timestamp deletes", "d", "h", nil, true),
        ("gone after registration deletes", "d", "h", 1500, true),
        ("gone at the same instant deletes", "d", "h", 1000, true),
        ("re-registered after the provider saw it die survives", "d", "h", 999, false),
        ("handle has moved on: survives", "d", "other", nil, false),
        ("unknown id: nothing", "x", "h", nil, false),
    ]

    @Test(arguments: RegistryBackend.allCases, goneCases.indices)
    func removeGoneHonoursTheTimestamp(backend: RegistryBackend, index: Int) throws {
        let (label, id, handle, since, deleted) = Self.goneCases[index]
        let (_, registry) = try RegistryFixture.make(on: backend)
        try registry.upsert(RegistryFixture.reg("d", .apns, "h", ["t"]), now: Date(timeIntervalSince1970: 1000))
        let result = try registry.removeGone(id: id, handle: handle, since: since.map(Date.init(timeIntervalSince1970:)))
        #expect(result == deleted, "\(label)")
        #expect(try (registry.device(id: "d") == nil) == deleted, "\(label)")
    }

    static let badRegistrations: [(Registration, String)] = [
        (RegistryFixture.reg("", .apns, "h"), "id: must not be empty"),
        (RegistryFixture.reg("a\nb", .apns, "h"), "id: contains a control character"),
        (RegistryFixture.reg("a", .apns, ""), "handle: must not be empty"),
        (RegistryFixture.reg("a", .apns, "h h"), "handle: contains whitespace or a control character"),
        (RegistryFixture.reg("a", .apns, "h\u{00A0}é"), "handle: contains whitespace or a control character"),
        (RegistryFixture.reg("a", .apns, "h", ["ok", "not ok"]),
         "tags[1]: invalid tag \"not ok\" (1-120 characters of A-Z a-z 0-9 _ @ # . : -)"),
        (RegistryFixture.reg("a", .apns, "h", [""]), "tags[0]: invalid tag \"\" (1-120 characters of A-Z a-z 0-9 _ @ # . : -)"),
    ]

    @Test(arguments: RegistryBackend.allCases, badRegistrations.indices)
    func rejectsInvalidRegistrations(backend: RegistryBackend, index: Int) throws {
        let (registration, message) = Self.badRegistrations[index]
        let (_, registry) = try RegistryFixture.make(on: backend)
        let error = #expect(throws: RegistryError.self) { try registry.upsert(registration) }
        #expect(error?.message == message)
        #expect(try registry.count(platforms: Set(Platform.allCases), matching: nil) == 0)
    }

    @Test(arguments: RegistryBackend.allCases) func closedRegistryRefusesWork(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        registry.close()
        registry.close()   // idempotent
        let error = #expect(throws: RegistryError.self) { try registry.device(id: "a") }
        #expect(error?.message == "registry is closed")
    }

    @Test func refusesANewerSchema() throws {
        let (dir, registry) = try RegistryFixture.make()
        try registry.locked { db in try db.execute("PRAGMA user_version = 99") }
        registry.close()
        let error = #expect(throws: RegistryError.self) { try SQLiteRegistry(path: dir.path("registry.sqlite")) }
        #expect(error?.message == "registry schema version 99 is newer than this pushspool supports (\(SQLiteRegistry.schemaVersion)); upgrade pushspool (nothing was written)")
        #expect(error?.isNewerSchema == true)
    }

    @Test(arguments: RegistryBackend.allCases) func storesLanguage(backend: RegistryBackend) throws {
        let (_, registry) = try RegistryFixture.make(on: backend)
        var r = RegistryFixture.reg("a", .fcm, "tok", ["t"])
        r.lang = LanguageTag("pt-br")
        #expect(try registry.upsert(r).lang?.value == "pt-BR")
        #expect(try registry.device(id: "a")?.lang == LanguageTag("pt-BR"))
        r.lang = nil
        try registry.upsert(r)
        #expect(try registry.device(id: "a")?.lang == nil)
    }

    @Test func migratesAVersion1Registry() throws {
        let dir = TempDir("registry")
        var r = RegistryFixture.reg("a", .fcm, "tok", ["t"])

        // A registry written by schema version 1 (no lang column) is migrated in place.
        let v1 = dir.path("v1.sqlite")
        let old = try SQLiteDatabase(path: v1)
        try old.execute("""
            CREATE TABLE devices(rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, platform TEXT NOT NULL,
                handle TEXT NOT NULL UNIQUE, updated_at REAL NOT NULL);
            CREATE TABLE device_tags(device_rowid INTEGER NOT NULL REFERENCES devices(rowid) ON DELETE CASCADE,
                tag TEXT NOT NULL, PRIMARY KEY(tag, device_rowid)) WITHOUT ROWID;
            INSERT INTO devices(id, platform, handle, updated_at) VALUES('old', 'apns', 'h', 1);
            PRAGMA user_version = 1;
            """)
        old.close()
        let migrated = try SQLiteRegistry(path: v1)
        #expect(try migrated.device(id: "old")?.lang == nil)
        r.lang = LanguageTag("fr")
        try migrated.upsert(r)
        #expect(try migrated.device(id: "a")?.lang?.value == "fr")
        migrated.close()
    }

    @Test func migrateCommandOnASQLiteRegistry() throws {
        let dir = TempDir("registry-migrate")
        let missing = try runPushspool(["registry", "migrate", "--spool", dir.path("new")])
        #expect(missing.status == 78 && missing.stderr.contains("no spool at"), "\(missing.stderr)")
        try initSpool(["--spool", dir.path("new")])
        try FileManager.default.removeItem(atPath: dir.path("new/registry.sqlite"))
        let fresh = try runPushspool(["registry", "migrate", "--spool", dir.path("new")])
        #expect(fresh.status == 0 && fresh.stdout.contains("schema migrated from version 0 to \(SQLiteRegistry.schemaVersion)"), "\(fresh.stdout)\(fresh.stderr)")
        let again = try runPushspool(["registry", "migrate", "--spool", dir.path("new")])
        #expect(again.stdout.contains("schema version \(SQLiteRegistry.schemaVersion), nothing to migrate"), "\(again.stdout)")
        let wrong = try runPushspool(["registry", "vacuum", "--spool", dir.path("new")])
        #expect(wrong.status == 64 && wrong.stderr.contains("unknown subcommand \"vacuum\"; expected `registry migrate` or `registry backup`"), "\(wrong.stderr)")
    }

    @Test func twoConnectionsShareTheFile() throws {
        let (dir, first) = try RegistryFixture.make()
        let second = try SQLiteRegistry(path: dir.path("registry.sqlite"))
        try first.upsert(RegistryFixture.reg("a", .apns, "h", ["t"]))
        #expect(try second.device(id: "a")?.tags == ["t"])
        try second.upsert(RegistryFixture.reg("b", .apns, "h", ["u"]))
        #expect(try first.device(id: "a") == nil)
    }
}
