import CSQLite
import Foundation
import PushspoolCore

/// Whether the device registry answers, asked within a bound: what `status` reports
/// (`registry: unreachable (<reason>)`) and what `serve`'s `/healthz` checks, through this one type.
///
/// A PostgreSQL registry is asked with a connection of its own, made and closed within
/// `timeout` (never the pool's: a pool's connect waits up to libpq's `connect_timeout`). A SQLite
/// registry is opened read-only and its schema read; a file not created yet is no problem
/// (the first `import` or `run` creates it). The reason never holds a secret (`Redaction`).
public struct RegistryProbe: Sendable {
    /// The registry as configured: a PostgreSQL URI or keyword string, or the SQLite file's path.
    public let location: String
    public let timeout: Double
    /// The registry's `env:` variable is not set: that is the problem, nothing to probe.
    private let unset: UnsetSecret?
    /// A PostgreSQL registry the caller holds open (`serve`): asked on one of its pooled
    /// connections with a statement timeout, instead of a connection made per probe.
    private let pooled: (any SharedRegistry)?

    /// `open`: the registry the caller already holds, if any (only a PostgreSQL one is used).
    public init(config: Config, timeout: Double = 0.3, open: (any DeviceRegistry)? = nil) {
        let value = config.registryPath
        unset = config.unsetSecrets["registry"]
        location = RegistryLocation.isPostgres(value) || unset != nil ? value : config.resolve(value).path
        self.timeout = timeout
        pooled = open?.shared
    }

    /// nil when the registry answers, else why not (one line, redacted).
    public func problem() -> String? {
        if let unset { return unset.description }
        if let pooled { return pooled.ping(timeout: timeout) }
        if RegistryLocation.isPostgres(location) { return PostgresConnection.probe(uri: location, timeout: timeout) }
        return sqliteProblem()
    }

    /// The `status --json` value: `{"reachable": true}` or `{"reachable": false, "error": "…"}`.
    public static func json(_ problem: String?) -> JSONValue {
        .object([("reachable", .bool(problem == nil))] + (problem.map { [("error", JSONValue.string($0))] } ?? []))
    }

    private func sqliteProblem() -> String? {
        guard FileManager.default.fileExists(atPath: location) else { return nil }
        var db: OpaquePointer?
        defer { sqlite3_close_v2(db) }
        guard sqlite3_open_v2(location, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let db else {
            return Redaction.scrub("cannot open \(location): \(db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory")")
        }
        sqlite3_busy_timeout(db, Int32(timeout * 1000))
        var err: UnsafeMutablePointer<CChar>?
        defer { sqlite3_free(err) }
        guard sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nil, nil, &err) == SQLITE_OK else {
            return Redaction.scrub("\(location): \(err.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(db)))")
        }
        return nil
    }
}
