import CSQLite
import Foundation

/// A thin, non-thread-safe wrapper over one sqlite3 connection with a prepared-statement cache.
/// `SQLiteRegistry` owns exactly one and only touches it under its lock.
final class SQLiteDatabase {
    /// `SQLITE_TRANSIENT` is a cast macro that Swift cannot import; it tells SQLite to copy bound
    /// text, which we need because Swift's temporary C strings die when the bind call returns.
    static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    private(set) var db: OpaquePointer?
    /// Fixed statements (upsert, delete…): kept for the connection's life.
    private var cache: [String: OpaquePointer] = [:]
    /// Statements whose text depends on a tag expression: bounded, see `statement(_:fixed:)`.
    private var queryCache: [String: OpaquePointer] = [:]

    /// `create: false`: a file that does not exist is an error, not a new database.
    init(path: String, create: Bool = true) throws(RegistryError) {
        var handle: OpaquePointer?
        // NOMUTEX: the SQLiteRegistry's Mutex already serialises every use of this connection.
        let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw RegistryError("cannot open registry \(path): \(message)")
        }
        db = handle
        sqlite3_extended_result_codes(handle, 1)
    }

    deinit { close() }

    var isOpen: Bool { db != nil }

    func close() {
        for stmt in cache.values { sqlite3_finalize(stmt) }
        for stmt in queryCache.values { sqlite3_finalize(stmt) }
        cache.removeAll()
        queryCache.removeAll()
        if let db { sqlite3_close_v2(db) }
        db = nil
    }

    private func connection() throws(RegistryError) -> OpaquePointer {
        guard let db else { throw RegistryError("registry is closed") }
        return db
    }

    var errorMessage: String { db.map { String(cString: sqlite3_errmsg($0)) } ?? "registry is closed" }

    /// Runs one or more statements without results (DDL, pragmas, transaction control).
    func execute(_ sql: String) throws(RegistryError) {
        let db = try connection()
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &err)
        guard rc == SQLITE_OK else {
            let message = err.map { String(cString: $0) } ?? errorMessage
            sqlite3_free(err)
            throw RegistryError(sqlite: message, rc: rc)
        }
    }

    /// A cached prepared statement for `sql`, reset and with bindings cleared.
    /// Callers must finish with it (step to the end or `reset`) before preparing the same SQL again.
    /// `fixed: false` marks expression-dependent query text: that cache is flushed when it grows
    /// past 64 entries, so a long-running dispatcher seeing many audiences stays bounded; callers
    /// use at most one such statement at a time, so a flush never finalizes one in use.
    func statement(_ sql: String, fixed: Bool = true) throws(RegistryError) -> SQLiteStatement {
        let db = try connection()
        if let stmt = fixed ? cache[sql] : queryCache[sql] {
            sqlite3_reset(stmt)
            sqlite3_clear_bindings(stmt)
            return SQLiteStatement(stmt: stmt, database: self)
        }
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil) == SQLITE_OK,
              let stmt else {
            throw RegistryError("registry: cannot prepare statement: \(errorMessage)")
        }
        if fixed {
            cache[sql] = stmt
        } else {
            if queryCache.count >= 64 {
                for old in queryCache.values { sqlite3_finalize(old) }
                queryCache.removeAll()
            }
            queryCache[sql] = stmt
        }
        return SQLiteStatement(stmt: stmt, database: self)
    }

    var changes: Int { db.map { Int(sqlite3_changes($0)) } ?? 0 }
    var lastInsertRowID: Int64 { db.map { sqlite3_last_insert_rowid($0) } ?? 0 }
    /// The last failure was a constraint (a UNIQUE index refusing a duplicate, say).
    var lastErrorIsConstraint: Bool { db.map { sqlite3_errcode($0) & 0xFF == SQLITE_CONSTRAINT } ?? false }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT` (rolled back when it throws). IMMEDIATE takes
    /// the write lock up front, so two processes never deadlock upgrading read locks; the busy
    /// timeout makes the loser wait instead of failing.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}

/// A borrowed cached statement. Binding indexes are 1-based, column indexes 0-based.
struct SQLiteStatement {
    let stmt: OpaquePointer
    unowned let database: SQLiteDatabase

    func bind(_ values: [SQLiteValue]) throws(RegistryError) {
        for (i, v) in values.enumerated() { try bind(v, at: Int32(i + 1)) }
    }

    func bind(_ value: SQLiteValue, at index: Int32) throws(RegistryError) {
        let rc: Int32
        switch value {
        case .text(let s): rc = sqlite3_bind_text(stmt, index, s, -1, SQLiteDatabase.transient)
        case .integer(let n): rc = sqlite3_bind_int64(stmt, index, n)
        case .real(let d): rc = sqlite3_bind_double(stmt, index, d)
        case .null: rc = sqlite3_bind_null(stmt, index)
        }
        guard rc == SQLITE_OK else { throw RegistryError("registry: cannot bind parameter: \(database.errorMessage)") }
    }

    /// Binds `count` bytes of UTF-8 at `text` without copying (`SQLITE_STATIC`): they must stay
    /// valid and unchanged until the statement is stepped and the parameter bound again.
    func bindStatic(_ text: UnsafePointer<UInt8>, count: Int, at index: Int32) throws(RegistryError) {
        let rc = text.withMemoryRebound(to: CChar.self, capacity: count) {
            sqlite3_bind_text(stmt, index, $0, Int32(count), nil)
        }
        guard rc == SQLITE_OK else { throw RegistryError("registry: cannot bind parameter: \(database.errorMessage)") }
    }

    func clearBindings() { sqlite3_clear_bindings(stmt) }

    /// Advances; true when a row is available.
    func step() throws(RegistryError) -> Bool {
        switch sqlite3_step(stmt) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let rc:
            let message = database.errorMessage
            sqlite3_reset(stmt)
            throw RegistryError(sqlite: message, rc: rc)
        }
    }

    /// Steps a statement that returns no rows, then resets it.
    func run(_ values: [SQLiteValue] = []) throws(RegistryError) {
        try bind(values)
        _ = try step()
        reset()
    }

    func reset() { sqlite3_reset(stmt) }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(stmt, column) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }
    func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(stmt, column) else { return "" }
        let n = Int(sqlite3_column_bytes(stmt, column))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// A text column's bytes, valid until the next step or reset.
    func bytes(_ column: Int32) -> UnsafeBufferPointer<UInt8> {
        guard let p = sqlite3_column_text(stmt, column) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(stmt, column)))
    }
}

enum SQLiteValue: Sendable, Equatable {
    case text(String)
    case integer(Int64)
    case real(Double)
    case null
}

extension RegistryError {
    /// A statement SQLite refused: busy when another connection held the lock past the timeout.
    init(sqlite message: String, rc: Int32) {
        let primary = rc & 0xFF
        self.init("registry: \(message)", kind: primary == SQLITE_BUSY || primary == SQLITE_LOCKED ? .busy : .refused)
    }
}
