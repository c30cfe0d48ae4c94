import Foundation
import PushspoolCore
import Synchronization

/// The device registry in a PostgreSQL database (`registry: "postgresql://user@host:5432/db"`),
/// shared by dispatchers on several hosts: the same contract as `SQLiteRegistry`
/// (`DeviceRegistry`), plus job-id claims and shared credentials.
///
/// Thread safety: a small pool of connections (`PostgresPool`); every method borrows one for its
/// statements and gives it back, so any number of threads may call. Values always travel as
/// statement parameters, never in SQL text. A lost connection fails the statement with a
/// `RegistryError` of kind `unavailable`; the next call reconnects.
public final class PostgresRegistry: SharedRegistry {
    public let location: String
    public let pool: PostgresPool
    public var shared: (any SharedRegistry)? { self }
    public var concurrentCalls: Int { pool.maxConnections }
    /// When this process last deleted expired reservations.
    let lastPurge = Mutex<Date?>(nil)
    /// Required tags found common (`isSparse`), and when (`Uptime` seconds).
    let commonTags = Mutex<[String: Double]>([:])
    /// The app and environment of registrations that name none, and the apps there are.
    public let defaults: RegistryDefaults

    /// Connects (failing now if the server cannot be reached), then creates or migrates the
    /// schema (`migrate: true`) or only checks it; either way a schema newer than this binary's
    /// is refused. `maxConnections`: the size of the process's one pool, which this registry
    /// makes and owns (`registry_connections`); the queue, the shared rate buckets, pauses and
    /// credentials borrow from it (`SharedRegistry.pool`).
    public init(uri: String, maxConnections: Int = 4, migrate: Bool = true, log: Log? = nil,
                defaults: RegistryDefaults = RegistryDefaults()) throws {
        location = RegistryLocation.redacted(uri)
        self.defaults = defaults
        let shown = location
        pool = PostgresPool(uri: uri, maxConnections: maxConnections) { reachable, detail in
            if reachable {
                log?.info("registry \(shown): PostgreSQL answers again")
            } else {
                log?.error("registry \(shown): PostgreSQL unreachable (\(detail)); jobs that need it wait in active/ and resume when it answers")
            }
        }
        do {
            try run { c in
                if migrate {
                    try PostgresSchema.migrate(c, defaults: defaults)
                } else {
                    let found = try PostgresSchema.currentVersion(c)
                    if found > PostgresSchema.version { throw PostgresSchema.newerError(found) }
                }
            }
        } catch {
            pool.close()
            throw error
        }
    }

    /// Closes the process's pool: every part that borrows from it fails from then on.
    public func close() { pool.close() }

    /// For `/healthz`: nil when one of the pool's connections answers `SELECT 1` within
    /// `timeout` seconds (a statement timeout for this statement only; the pool's connection is
    /// reused, not a new one made per check), else why not (redacted).
    public func ping(timeout: Double) -> String? {
        let ms = max(1, Int(timeout * 1000))
        do {
            try pool.withConnection(waitingAtMost: timeout) { c in
                do {
                    try c.execute("BEGIN; SET LOCAL statement_timeout = \(ms); SELECT 1; COMMIT")
                } catch {
                    // Not given back inside a failed transaction.
                    try? c.execute("ROLLBACK")
                    throw error
                }
            }
            return nil
        } catch {
            return Redaction.scrub(RegistryError.detail(error))
        }
    }

    /// Creates or migrates the schema at `uri`; returns the versions before and after.
    public static func migrate(uri: String, defaults: RegistryDefaults = RegistryDefaults()) throws(RegistryError) -> (from: Int, to: Int) {
        let pool = PostgresPool(uri: uri, maxConnections: 1)
        defer { pool.close() }
        do {
            let from = try pool.withConnection { c in try PostgresSchema.migrate(c, defaults: defaults) }
            return (from, max(from, PostgresSchema.version))
        } catch {
            throw RegistryError.from(error)
        }
    }

    /// Runs `body` on a pooled connection; PostgreSQL errors become `RegistryError`s.
    func run<T>(_ body: (PostgresConnection) throws -> T) throws(RegistryError) -> T {
        do {
            return try pool.withConnection(body)
        } catch {
            throw RegistryError.from(error)
        }
    }

    /// Runs `body` in a transaction, again (up to 5 times) when it lost a race with another
    /// host: a unique violation (the same handle registered at the same moment), a
    /// serialization failure or a deadlock.
    func transaction<T>(_ body: (PostgresConnection) throws -> T) throws(RegistryError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try pool.withConnection { c in try c.transaction { try body(c) } }
            } catch let e as PostgresError where (e.isUniqueViolation || e.isTransient) && attempt < 5 {
                continue
            } catch {
                throw RegistryError.from(error)
            }
        }
    }

    // MARK: - Writes

    @discardableResult
    public func upsert(_ r: Registration, now: Date = Date()) throws(RegistryError) -> Device {
        try upsertReportingMove(r, now: now).device
    }

    public func upsertReportingMove(_ r: Registration, now: Date = Date()) throws(RegistryError) -> (device: Device, movedFrom: String?) {
        if let (field, message) = r.problem() ?? defaults.problem(r) { throw RegistryError("\(field): \(message)") }
        let now = Date(timeIntervalSince1970: now.timeIntervalSince1970)
        let tags = Array(Set(r.tags)).sorted()
        let app = defaults.app(of: r), environment = defaults.environment(of: r)
        let kind = r.platform == .apns ? r.tokenKind ?? .device : .device
        return try transaction { c in
            let holder = try c.query("SELECT id FROM devices WHERE handle = $1 AND app = $2 AND platform = $3 FOR UPDATE",
                                     [r.handle, app, r.platform.rawValue])
            let previous = holder.count > 0 ? holder.text(0, 0) : nil
            let id = r.id ?? previous ?? UUID().uuidString.lowercased()
            if let previous, previous != id {
                // The token moved to another installation: one device, one row.
                try c.query("DELETE FROM devices WHERE handle = $1 AND app = $2 AND platform = $3", [r.handle, app, r.platform.rawValue])
            }
            try c.query("""
                INSERT INTO devices(id, platform, handle, updated_at, lang, tags, app, environment, token_kind, tz)
                    VALUES($1, $2, $3, $4::float8, $5, $6::text[], $7, $8, $9, $10)
                ON CONFLICT (id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
                    updated_at = excluded.updated_at, lang = excluded.lang, tags = excluded.tags,
                    app = excluded.app, environment = excluded.environment, token_kind = excluded.token_kind, tz = excluded.tz
                """, [id, r.platform.rawValue, r.handle, "\(now.timeIntervalSince1970)", r.lang?.value, Self.arrayLiteral(tags),
                      app, environment?.rawValue, kind.rawValue, r.tz])
            // A registration under a reserved id uses the reservation up.
            try c.query("DELETE FROM id_reservations WHERE id = $1", [id])
            let device = Device(id: id, platform: r.platform, handle: r.handle, tags: tags, lang: r.lang, updatedAt: now,
                                app: app, environment: environment, tokenKind: kind, tz: r.tz)
            return (device, previous == id ? nil : previous)
        }
    }

    /// A text[] parameter: `{"a","b"}`. Tags hold no quote, backslash or comma (hub tag syntax),
    /// and quoting each element keeps a tag named `NULL` a string.
    static func arrayLiteral(_ tags: [String]) -> String {
        "{" + tags.map { "\"\($0)\"" }.joined(separator: ",") + "}"
    }

    @discardableResult
    public func remove(id: String) throws(RegistryError) -> Bool {
        try run { c in try c.query("DELETE FROM devices WHERE id = $1", [id]).affected > 0 }
    }

    @discardableResult
    public func remove(handle: String, app: String?) throws(RegistryError) -> Bool {
        try run { c in try c.query("DELETE FROM devices WHERE handle = $1 AND app = $2", [handle, app ?? defaults.app]).affected > 0 }
    }

    @discardableResult
    public func removeGone(id: String, handle: String, since: Date?) throws(RegistryError) -> Bool {
        try run { c in
            if let since {
                return try c.query("DELETE FROM devices WHERE id = $1 AND handle = $2 AND updated_at <= $3::float8",
                                   [id, handle, "\(since.timeIntervalSince1970)"]).affected > 0
            }
            return try c.query("DELETE FROM devices WHERE id = $1 AND handle = $2", [id, handle]).affected > 0
        }
    }

    public func replaceHandle(_ change: HandleChange, now: Date) throws(RegistryError) -> Bool {
        try run { c in
            // A device of the same app and platform holding the new handle already: this row is
            // the same device under its old handle, removed instead.
            let holder = "EXISTS (SELECT 1 FROM devices o WHERE o.handle = $3 AND o.app = devices.app AND o.platform = devices.platform)"
            if try c.query("UPDATE devices SET handle = $3, updated_at = $4::float8 WHERE id = $1 AND handle = $2 AND NOT \(holder)",
                           [change.id, change.handle, change.canonical, "\(now.timeIntervalSince1970)"]).affected > 0 {
                return true
            }
            return try c.query("DELETE FROM devices WHERE id = $1 AND handle = $2 AND \(holder)",
                               [change.id, change.handle, change.canonical]).affected > 0
        }
    }

    // MARK: - Reads

    /// Columns read by `device(from:row:)`.
    static let deviceColumns = "d.seq, d.id, d.platform, d.handle, d.updated_at, array_to_string(d.tags, ' '), d.lang, d.app, d.environment, d.token_kind, d.tz"

    public func device(id: String) throws(RegistryError) -> Device? {
        try run { c in
            let rows = try c.query("SELECT \(Self.deviceColumns) FROM devices d WHERE d.id = $1", [id])
            return rows.count > 0 ? try Self.device(from: rows, row: 0) : nil
        }
    }

    public func device(handle: String, app: String?) throws(RegistryError) -> Device? {
        try run { c in
            let rows = try c.query("SELECT \(Self.deviceColumns) FROM devices d WHERE d.handle = $1 AND d.app = $2 LIMIT 1",
                                   [handle, app ?? defaults.app])
            return rows.count > 0 ? try Self.device(from: rows, row: 0) : nil
        }
    }

    static func device(from rows: PostgresRows, row: Int) throws -> Device {
        var languages: [String: LanguageTag] = [:]
        return try device(from: rows, row: row, languages: &languages)
    }

    static func device(from rows: PostgresRows, row i: Int, languages: inout [String: LanguageTag]) throws -> Device {
        let id = rows.text(i, 1) ?? ""
        let raw = rows.text(i, 2) ?? ""
        guard let platform = Platform(rawValue: raw) else {
            throw RegistryError("registry: device \(id) has unknown platform \"\(raw)\"")
        }
        let tags = (rows.text(i, 5) ?? "").split(separator: " ").map(String.init)
        var lang: LanguageTag?
        if let text = rows.text(i, 6) {
            if let known = languages[text] {
                lang = known
            } else {
                lang = LanguageTag(text)
                if languages.count < 256, let lang { languages[text] = lang }
            }
        }
        let environment = platform == .apns ? rows.text(i, 8).flatMap(APNsEnvironment.init(name:)) : nil
        let kind = platform == .apns ? rows.text(i, 9).flatMap(APNsTokenKind.init(rawValue:)) ?? .device : .device
        return Device(id: id, platform: platform, handle: rows.text(i, 3) ?? "", tags: tags, lang: lang,
                      updatedAt: Date(timeIntervalSince1970: rows.double(i, 4)), app: rows.text(i, 7) ?? AppConfig.implicitID,
                      environment: environment, tokenKind: kind, tz: rows.text(i, 10))
    }

    // MARK: - Job claims

    public func claimJob(id: String, owner: String) throws(RegistryError) -> Bool {
        // Job ids that differ only by case are one id (each host's spool folds them too).
        let id = Identifier.jobKey(id)
        return try run { c in
            let inserted = try c.query("INSERT INTO job_claims(job_id, owner) VALUES($1, $2) ON CONFLICT (job_id) DO NOTHING",
                                       [id, owner]).affected
            if inserted > 0 { return true }
            // Claimed before: by this owner (a resume after a crash or a lost connection) or another.
            let holder = try c.query("SELECT owner FROM job_claims WHERE job_id = $1", [id])
            return holder.count > 0 && holder.text(0, 0) == owner
        }
    }
}

extension RegistryError {
    /// A statement PostgreSQL refused, or a lost connection (unavailable: the next call reconnects).
    init(_ e: PostgresError) {
        self.init("registry: \(e)", kind: e.connectionLost ? .unavailable : .refused)
    }
}
