import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The device registry: one SQLite file (default `<spool>/registry.sqlite`) shared by the CLI,
/// every dispatcher thread and any other pushspool process on the spool.
///
/// Thread safety: one connection behind a Mutex; every method may be called from any thread.
/// Cross-process: WAL mode (readers never block the writer) and a 30 s busy timeout; writes take
/// the write lock up front (`BEGIN IMMEDIATE`).
public final class SQLiteRegistry: RegistryDatabase {
    public let path: String
    public var location: String { path }
    private let connection: Mutex<SQLiteDatabase>
    /// When this process last deleted expired reservations.
    let lastPurge = Mutex<Date?>(nil)
    /// Whether this process made sure `devices_by_tz` exists (`forEach(zone:)`).
    let zoneIndexReady = Mutex(false)
    /// The app and environment of registrations that name none, and the apps there are.
    public let defaults: RegistryDefaults
    /// The schema version this open found (below `schemaVersion`: this open migrated it).
    public let foundVersion: Int

    /// 1: devices and tags. 2: `devices.lang` (BCP 47, for localized jobs). 3: a device's tags
    /// also kept on its row (` a b c `, sorted, space-delimited: a tag never holds a space), so
    /// reading a device needs no join and a tag expression is tested on the row itself; the
    /// `device_tags` table (clustered on tag) stays the index that finds a tag's devices; the
    /// unique indexes are named indexes (not table constraints), so a bulk load into an empty
    /// registry can build them once at the end. 4: `id_reservations`, installation ids handed
    /// out before their device registers. 5: `devices.app` and `devices.environment` (§ Several
    /// apps); a handle is unique per app and platform. 6: `devices.token_kind` (which of Apple's
    /// tokens an APNs handle is) and `apns_channels`, each app's broadcast channels. 7:
    /// `devices.tz` (an IANA zone name, for `local_time` jobs; NULL: the app's `default_tz`),
    /// added with no row rewritten. 8: `cap_counts`, the frequency cap counts. 9: tracked jobs, their
    /// secure content and the events apps report (`NotificationStore`).
    static let schemaVersion = 9
    static let tables = """
        CREATE TABLE devices(
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL,
            platform TEXT NOT NULL,
            handle TEXT NOT NULL,
            updated_at REAL NOT NULL,
            lang TEXT,
            tags TEXT NOT NULL DEFAULT ' ');
        CREATE TABLE device_tags(
            tag TEXT NOT NULL,
            device_rowid INTEGER NOT NULL,
            PRIMARY KEY(tag, device_rowid)) WITHOUT ROWID;
        """
    /// Built once, from one sort each, after a bulk load; maintained row by row otherwise. The
    /// handle first: an unregistration by handle (platform unknown) finds it too.
    static let indexes = """
        CREATE UNIQUE INDEX devices_by_id ON devices(id);
        CREATE UNIQUE INDEX devices_by_handle ON devices(handle, app, platform);
        """
    /// The indexes of schema versions 3 and 4 (a handle unique in the whole registry).
    static let indexesBeforeApps = """
        CREATE UNIQUE INDEX devices_by_id ON devices(id);
        CREATE UNIQUE INDEX devices_by_handle ON devices(handle);
        """
    static let dropIndexes = """
        DROP INDEX devices_by_id;
        DROP INDEX devices_by_handle;
        """
    /// A deleted device takes its tag index entries with it, whoever deletes it. Tags hold no
    /// quote or backslash, so the row's tag list becomes a JSON array by plain replacement.
    /// The tag list of every row as JSON array text, for `json_each` (a tag holds no quote,
    /// backslash or space).
    static func tagArray(_ column: String) -> String {
        "'[\"' || replace(trim(\(column)), ' ', '\",\"') || '\"]'"
    }

    static let untagTrigger = """
        CREATE TRIGGER devices_untag AFTER DELETE ON devices BEGIN
            DELETE FROM device_tags WHERE device_rowid = old.rowid
                AND tag IN (SELECT value FROM json_each(\(tagArray("old.tags"))));
        END;
        """

    /// Opens or creates the database (file mode 0600, parent folder created 0700), WAL mode,
    /// busy_timeout 30 s, schema migration.
    public init(path: String, defaults: RegistryDefaults = RegistryDefaults()) throws {
        self.path = path
        self.defaults = defaults
        try Self.prepareFile(path)
        let db = try SQLiteDatabase(path: path)
        do {
            // busy_timeout first: switching to WAL and migrating may wait for another process.
            // 30 s: a writer waits out a bulk import of a million devices (a few seconds) rather
            // than failing; readers never wait in WAL mode.
            try db.execute("PRAGMA busy_timeout = 30000")
            // 16 KiB pages (default 4): a third of the B-tree pages and page writes for a
            // million short rows. Takes effect only on a new file (before WAL mode is set).
            try db.execute("PRAGMA page_size = 16384")
            try db.execute("PRAGMA synchronous = NORMAL")
            // 8 MiB of page cache (default 2): the hot index pages of a million-device registry
            // stay in memory and peak RSS stays under 64 MB; sorts spill to temporary files.
            try db.execute("PRAGMA cache_size = -8192")
            foundVersion = try Self.untilNotBusy {
                try db.execute("PRAGMA journal_mode = WAL")
                return try Self.migrate(db, defaults: defaults)
            }
        } catch {
            db.close()
            throw error
        }
        connection = Mutex(db)
    }

    /// Runs `body` again while SQLite answers busy at once, for up to the busy timeout (30 s).
    /// Switching a rollback-journal file to WAL can fail with SQLITE_BUSY without calling the
    /// busy handler while another process opening the same file holds its lock (two `registry
    /// migrate` of one old registry failed 5 times in 30 with "database is locked"); the switch
    /// and the migration are idempotent, so they are simply tried again.
    ///
    /// The pause between tries is a pause, not a wait on an event, because there is no event to
    /// wait on. SQLite skips the busy handler (and so `busy_timeout`) here on purpose: this
    /// connection already holds a shared lock while it asks for the exclusive one, and so may
    /// the other opener, so waiting inside would deadlock both. The lock being waited for is the
    /// other process's POSIX lock on the file, whose release neither SQLite nor the kernel
    /// announces (a blocking `F_SETLKW` on SQLite's lock bytes would take the lock behind
    /// SQLite's back). Waiting for the write lock first (`BEGIN IMMEDIATE`, which does use the
    /// busy handler) would line the two openers up to collide again; a random pause of 10–50 ms
    /// is what breaks that symmetry. It runs only while a registry is opened, never per statement.
    static func untilNotBusy<T>(_ body: () throws -> T) throws -> T {
        let deadline = Date().addingTimeInterval(30)
        while true {
            do {
                return try body()
            } catch let error as RegistryError where error.kind == .busy && Date() < deadline {
                usleep(useconds_t.random(in: 10_000...50_000))
            }
        }
    }

    /// Creates the parent folder (0700) and the file itself (0600) before SQLite does, since
    /// SQLite would create it with the umask's mode; its -wal/-shm files copy the file's mode.
    private static func prepareFile(_ path: String) throws {
        let url = URL(fileURLWithPath: path)
        let parent = url.deletingLastPathComponent()
        if !FileManager.default.fileExists(atPath: parent.path) {
            do {
                try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw RegistryError("cannot create folder \(parent.path): \(error.localizedDescription)")
            }
        }
        // O_CREAT without O_TRUNC: safe when another process creates it at the same moment.
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw RegistryError("cannot open registry \(path): \(String(cString: strerror(errno)))")
        }
        FileIO.closeDescriptor(fd)
    }

    /// Opens (creating or migrating) the file; returns the schema versions before and after.
    public static func migrate(path: String, defaults: RegistryDefaults = RegistryDefaults()) throws -> (from: Int, to: Int) {
        let registry = try SQLiteRegistry(path: path, defaults: defaults)
        registry.close()
        return (registry.foundVersion, schemaVersion)
    }

    /// Every step in one transaction taken with the write lock (`BEGIN IMMEDIATE`): a second
    /// process opening the same old registry waits, then finds it migrated; a process killed
    /// midway leaves the old schema (the WAL's uncommitted pages are ignored) and the next open
    /// migrates again. A newer schema than this binary knows is refused before anything is written.
    /// Returns the version found (inside the lock: a second process finds the first's work).
    private static func migrate(_ db: SQLiteDatabase, defaults: RegistryDefaults) throws -> Int {
        let peek = try db.statement("PRAGMA user_version")
        let seen = try peek.step() ? Int(peek.int64(0)) : 0
        peek.reset()
        if seen > schemaVersion { throw newerSchema(seen) }
        if seen == schemaVersion { return seen }
        return try db.transaction {
            let stmt = try db.statement("PRAGMA user_version")
            let version = try stmt.step() ? Int(stmt.int64(0)) : 0
            stmt.reset()
            guard version <= schemaVersion else { throw newerSchema(version) }
            if version < 1 {
                try db.execute(tables + indexesBeforeApps + untagTrigger)
            } else {
                if version < 2 { try db.execute("ALTER TABLE devices ADD COLUMN lang TEXT") }
                if version < 3 { try migrateToTagLists(db) }
            }
            if version < 4 { try db.execute(reservationsTable) }
            if version < 5 { try addApps(db, defaults: defaults) }
            if version < 6 { try db.execute(tokenKindsAndChannels) }
            if version < 7 { try db.execute("ALTER TABLE devices ADD COLUMN tz TEXT") }
            if version < 8 { try db.execute(capCountsTable) }
            if version < 9 { try db.execute(notificationTables) }
            if version < schemaVersion {
                try db.execute("PRAGMA user_version = \(schemaVersion)")
            }
            return version
        }
    }

    /// Version 2 → 3: the devices table gets its tag list and named unique indexes (a table's
    /// UNIQUE constraints cannot be dropped, so it is rebuilt, rowids kept), and `device_tags`
    /// loses its foreign key and by-device index (the trigger does their work).
    private static func migrateToTagLists(_ db: SQLiteDatabase) throws {
        try db.execute("""
            ALTER TABLE devices RENAME TO devices_v2;
            ALTER TABLE device_tags RENAME TO device_tags_v2;
            \(tables)
            INSERT INTO devices(rowid, id, platform, handle, updated_at, lang, tags)
                SELECT d.rowid, d.id, d.platform, d.handle, d.updated_at, d.lang,
                       ' ' || coalesce((SELECT group_concat(tag, ' ') FROM
                           (SELECT tag FROM device_tags_v2 WHERE device_rowid = d.rowid ORDER BY tag)) || ' ', '')
                FROM devices_v2 d;
            INSERT INTO device_tags(tag, device_rowid) SELECT tag, device_rowid FROM device_tags_v2 ORDER BY tag, device_rowid;
            DROP TABLE device_tags_v2;
            DROP TABLE devices_v2;
            \(indexesBeforeApps)
            \(untagTrigger)
            """)
    }

    static func newerSchema(_ version: Int) -> RegistryError {
        RegistryError.newerSchema(version, known: schemaVersion)
    }

    /// Version 4 → 5: every device gets the default app and, read on APNs rows only, the APNs
    /// provider's environment. Columns with a constant default: SQLite records the default in
    /// the schema and rewrites no row, so a million devices migrate in the time of one index.
    private static func addApps(_ db: SQLiteDatabase, defaults: RegistryDefaults) throws {
        try db.execute("""
            ALTER TABLE devices ADD COLUMN app TEXT NOT NULL DEFAULT \(sqlLiteral(defaults.app));
            ALTER TABLE devices ADD COLUMN environment TEXT DEFAULT \(sqlLiteral(defaults.environment.rawValue));
            DROP INDEX devices_by_handle;
            CREATE UNIQUE INDEX devices_by_handle ON devices(handle, app, platform);
            """)
    }

    /// Version 5 → 6: every device's token is a `device` token (a constant default: no row is
    /// rewritten), and each app's broadcast channels (iOS 18), so `apns channels list` needs no
    /// round trip to Apple.
    static let tokenKindsAndChannels = """
        ALTER TABLE devices ADD COLUMN token_kind TEXT NOT NULL DEFAULT 'device';
        \(APNsChannelTables.sqlite)
        """

    /// An app id or environment as SQL text (`[A-Za-z0-9._-]`: nothing to escape but quotes).
    static func sqlLiteral(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "''") + "'" }

    /// The stored form of a tag list: sorted, deduplicated, each tag between spaces.
    static func tagList(_ tags: [String]) -> String {
        tagList(sortedUnique: Array(Set(tags)).sorted())
    }

    static func tagList(sortedUnique tags: [String]) -> String {
        var list = " "
        list.reserveCapacity(tags.reduce(1) { $0 + $1.utf8.count + 1 })
        for t in tags {
            list += t
            list += " "
        }
        return list
    }

    /// Runs `body` with the connection locked; fails once the registry is closed. The one place
    /// this backend's failures take the contract's error type (`RegistryError.from`).
    func locked<T: Sendable>(_ body: (SQLiteDatabase) throws -> T) throws(RegistryError) -> T {
        do {
            return try connection.withLock { db throws -> T in
                guard db.isOpen else { throw RegistryError("registry is closed") }
                return try body(db)
            }
        } catch {
            throw RegistryError.from(error)
        }
    }

    public func close() {
        connection.withLock { $0.close() }
    }

    /// One host, one spool: the result log tells duplicates apart, so every id is this owner's.
    public func claimJob(id: String, owner: String) throws(RegistryError) -> Bool {
        try locked { _ in true }
    }

    // MARK: - Writes

    /// Upsert by installation id. A nil id reuses the id already holding this handle, else a new
    /// lowercase UUID. A handle registered under another id is MOVED to this id (that other row
    /// deleted), never duplicated. Tags replaced, updated_at = now.
    @discardableResult
    public func upsert(_ r: Registration, now: Date = Date()) throws(RegistryError) -> Device {
        if let (field, message) = r.problem() ?? defaults.problem(r) { throw RegistryError("\(field): \(message)") }
        return try locked { db in
            try db.transaction {
                let device = try Self.upsert(r, now: now, defaults: defaults, in: db).device
                try Self.consumeReservation(device.id, in: db)
                return device
            }
        }
    }

    /// `upsert`, also telling which other installation id held this handle before (it was moved
    /// here and its row deleted), so a hub's copy of that installation can be removed too.
    public func upsertReportingMove(_ r: Registration, now: Date = Date()) throws(RegistryError) -> (device: Device, movedFrom: String?) {
        if let (field, message) = r.problem() ?? defaults.problem(r) { throw RegistryError("\(field): \(message)") }
        return try locked { db in
            try db.transaction {
                let upserted = try Self.upsert(r, now: now, defaults: defaults, in: db)
                try Self.consumeReservation(upserted.device.id, in: db)
                return upserted
            }
        }
    }

    /// The upsert itself; the caller holds the lock, has validated `r` and opened a transaction.
    /// `movedFrom`: the other installation id that held this handle (its row was deleted).
    static func upsert(_ r: Registration, now: Date, defaults: RegistryDefaults, in db: SQLiteDatabase) throws -> (device: Device, movedFrom: String?) {
        // Round-trip through the stored representation so the returned Device equals a re-read.
        let now = Date(timeIntervalSince1970: now.timeIntervalSince1970)
        let app = defaults.app(of: r), environment = defaults.environment(of: r)
        let env: SQLiteValue = environment.map { .text($0.rawValue) } ?? .null
        let kind = r.platform == .apns ? r.tokenKind ?? .device : .device
        let byHandle = try db.statement("SELECT rowid, id FROM devices WHERE handle = ? AND app = ? AND platform = ?")
        try byHandle.bind([.text(r.handle), .text(app), .text(r.platform.rawValue)])
        let holder: (rowid: Int64, id: String)? = try byHandle.step() ? (byHandle.int64(0), byHandle.text(1)) : nil
        byHandle.reset()

        let id = r.id ?? holder?.id ?? UUID().uuidString.lowercased()
        if let holder, holder.id != id {
            // The app reinstalled or the token moved between installations: one device, one row
            // (the trigger removes the old row's tags).
            try db.statement("DELETE FROM devices WHERE rowid = ?").run([.integer(holder.rowid)])
        }

        let byID = try db.statement("SELECT rowid, tags FROM devices WHERE id = ?")
        try byID.bind([.text(id)])
        let existing: (rowid: Int64, tags: String)? = try byID.step() ? (byID.int64(0), byID.text(1)) : nil
        byID.reset()

        let tags = Array(Set(r.tags)).sorted()
        let list = tagList(sortedUnique: tags)
        let lang: SQLiteValue = r.lang.map { .text($0.value) } ?? .null
        let tz: SQLiteValue = r.tz.map { .text($0) } ?? .null
        let rowid: Int64
        var added = tags
        if let existing {
            try db.statement("UPDATE devices SET platform = ?, handle = ?, updated_at = ?, lang = ?, tags = ?, app = ?, environment = ?, "
                             + "token_kind = ?, tz = ? WHERE rowid = ?")
                .run([.text(r.platform.rawValue), .text(r.handle), .real(now.timeIntervalSince1970), lang, .text(list), .text(app), env,
                      .text(kind.rawValue), tz, .integer(existing.rowid)])
            let old = Set(existing.tags.split(separator: " ").map(String.init))
            let removeTag = try db.statement("DELETE FROM device_tags WHERE tag = ? AND device_rowid = ?")
            for tag in old.subtracting(tags) { try removeTag.run([.text(tag), .integer(existing.rowid)]) }
            added = tags.filter { !old.contains($0) }
            rowid = existing.rowid
        } else {
            try db.statement("INSERT INTO devices(id, platform, handle, updated_at, lang, tags, app, environment, token_kind, tz) "
                             + "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
                .run([.text(id), .text(r.platform.rawValue), .text(r.handle), .real(now.timeIntervalSince1970), lang, .text(list),
                      .text(app), env, .text(kind.rawValue), tz])
            rowid = db.lastInsertRowID
        }
        let addTag = try db.statement("INSERT INTO device_tags(tag, device_rowid) VALUES(?, ?)")
        for tag in added { try addTag.run([.text(tag), .integer(rowid)]) }
        return (Device(id: id, platform: r.platform, handle: r.handle, tags: tags, lang: r.lang, updatedAt: now,
                       app: app, environment: environment, tokenKind: kind, tz: r.tz),
                holder.flatMap { $0.id == id ? nil : $0.id })
    }

    @discardableResult
    public func remove(id: String) throws(RegistryError) -> Bool {
        try locked { db in
            try db.statement("DELETE FROM devices WHERE id = ?").run([.text(id)])
            return db.changes > 0
        }
    }

    /// The device holding `handle` in `app` (nil: the default app).
    @discardableResult
    public func remove(handle: String, app: String?) throws(RegistryError) -> Bool {
        try locked { db in
            try db.statement("DELETE FROM devices WHERE handle = ? AND app = ?").run([.text(handle), .text(app ?? defaults.app)])
            return db.changes > 0
        }
    }

    /// The provider reported this device gone: delete it only if it still has this handle and
    /// was not updated after `since` (APNs 410 timestamp; nil = delete). A device that
    /// re-registered after the provider noticed the token die, or whose handle has since moved,
    /// is a live registration and must survive.
    @discardableResult
    public func removeGone(id: String, handle: String, since: Date?) throws(RegistryError) -> Bool {
        try removeGone([GoneDevice(id: id, handle: handle, since: since)]) > 0
    }

    /// One transaction for the whole batch: a campaign's prunes cost one commit each batch.
    @discardableResult
    public func removeGone(_ devices: [GoneDevice]) throws(RegistryError) -> Int {
        try locked { db in
            try db.transaction {
                var removed = 0
                for d in devices {
                    if let since = d.since {
                        try db.statement("DELETE FROM devices WHERE id = ? AND handle = ? AND updated_at <= ?")
                            .run([.text(d.id), .text(d.handle), .real(since.timeIntervalSince1970)])
                    } else {
                        try db.statement("DELETE FROM devices WHERE id = ? AND handle = ?").run([.text(d.id), .text(d.handle)])
                    }
                    removed += db.changes
                }
                return removed
            }
        }
    }

    public func replaceHandle(_ change: HandleChange, now: Date) throws(RegistryError) -> Bool {
        try locked { db in
            try db.transaction {
                // OR IGNORE: a device of the same app and platform holding the new handle
                // already leaves this row as it is, to be removed below.
                try db.statement("UPDATE OR IGNORE devices SET handle = ?, updated_at = ? WHERE id = ? AND handle = ?")
                    .run([.text(change.canonical), .real(now.timeIntervalSince1970), .text(change.id), .text(change.handle)])
                if db.changes > 0 { return true }
                try db.statement("""
                    DELETE FROM devices WHERE id = ? AND handle = ? AND EXISTS (SELECT 1 FROM devices o
                        WHERE o.handle = ? AND o.app = devices.app AND o.platform = devices.platform)
                    """).run([.text(change.id), .text(change.handle), .text(change.canonical)])
                return db.changes > 0
            }
        }
    }

    // MARK: - Reads

    public func device(id: String) throws(RegistryError) -> Device? { try device(where: "d.id = ?", [.text(id)]) }

    public func device(handle: String, app: String?) throws(RegistryError) -> Device? {
        try device(where: "d.handle = ? AND d.app = ?", [.text(handle), .text(app ?? defaults.app)])
    }

    /// The device the condition names (unique: by id, or by handle within an app).
    private func device(where condition: String, _ values: [SQLiteValue]) throws(RegistryError) -> Device? {
        try locked { db in
            let stmt = try db.statement("SELECT \(Self.deviceColumns) FROM devices d WHERE \(condition) LIMIT 1")
            try stmt.bind(values)
            defer { stmt.reset() }
            return try stmt.step() ? try Self.device(from: stmt) : nil
        }
    }

    /// Columns read by `device(from:)`.
    static let deviceColumns = "d.rowid, d.id, d.platform, d.handle, d.updated_at, d.tags, d.lang, d.app, d.environment, d.token_kind, d.tz"

    static func device(from stmt: SQLiteStatement) throws -> Device {
        var reader = SQLiteDeviceReader()
        return try reader.device(from: stmt)
    }
}
