import CLibpq
import Foundation
import PushspoolCore

/// A PostgreSQL failure: the server's message, its SQLSTATE when it sent one, and whether the
/// connection itself is gone (server restarted, network cut) rather than the statement refused.
struct PostgresError: Error, Sendable, CustomStringConvertible {
    var message: String
    var sqlState: String?
    var connectionLost: Bool

    init(_ message: String, sqlState: String? = nil, connectionLost: Bool = false) {
        // libpq's messages can echo the connection string (a malformed URI, a bad option).
        self.message = Redaction.scrub(message)
        self.sqlState = sqlState
        // Class 08 (connection exception), 57P01–57P03 (admin shutdown, crash shutdown,
        // cannot connect now: the server is stopping or starting).
        self.connectionLost = connectionLost || sqlState?.hasPrefix("08") == true
            || ["57P01", "57P02", "57P03"].contains(sqlState ?? "")
    }

    var isUniqueViolation: Bool { sqlState == "23505" }
    /// Serialization failure or deadlock: the transaction may simply be run again.
    var isTransient: Bool { sqlState == "40001" || sqlState == "40P01" }

    var description: String {
        connectionLost ? "PostgreSQL unreachable: \(message)" : message + (sqlState.map { " (SQLSTATE \($0))" } ?? "")
    }
}

/// One libpq connection: parameters as text or raw bytes (values never spliced into SQL text), statements
/// prepared once per connection, COPY FROM STDIN. Not thread-safe: `PostgresPool` lends it to
/// one thread at a time.
final class PostgresConnection: @unchecked Sendable {
    private var conn: OpaquePointer?
    /// SQL text → prepared statement name, for this connection's life.
    private var prepared: [String: String] = [:]

    /// `uri`: `postgresql://user@host:5432/db?…` or any libpq connection string. These apply
    /// unless the URI sets its own: a connect timeout of 10 s, the application name, and over
    /// TCP, a connection that goes 10 s without an acknowledgement is dropped (`tcp_user_timeout`,
    /// with keepalives after 5 s idle): cut off from the database by the network, a statement
    /// fails within seconds instead of waiting for the system's retransmissions (15 minutes),
    /// so a host lets its chunks go, stops when told and reconnects once the network is back.
    init(uri: String) throws(PostgresError) {
        let keys = ["connect_timeout", "application_name", "tcp_user_timeout", "keepalives_idle", "keepalives_interval", "dbname"]
        let values = ["10", "pushspool", "10000", "5", "2", uri]
        let handle: OpaquePointer? = withCStrings(keys) { k in
            withCStrings(values) { v in PQconnectdbParams(k, v, 1) }
        }
        guard let handle else { throw PostgresError("cannot allocate a PostgreSQL connection", connectionLost: true) }
        guard PQstatus(handle) == CONNECTION_OK else {
            var message = Self.trimmed(PQerrorMessage(handle))
            for password in Redaction.passwords(inConnectionString: uri) {
                message = message.replacingOccurrences(of: password, with: Redaction.mask)
            }
            PQfinish(handle)
            throw PostgresError("cannot connect: \(message)", connectionLost: true)
        }
        // Notices ("relation already exists, skipping") would go to stderr: drop them.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        conn = handle
        // The server's side of a cut: a host cut off inside a transaction (a chunk's cut moving
        // on, a credential's renewal) would keep its row and advisory locks for as long as the
        // server believes the session alive (hours of TCP keepalive, forever behind a proxy or
        // a socket), and every other host would wait on them. No pushspool transaction waits
        // on its client for more than a token fetch, so one idle longer than this is ended and
        // its locks go. A plain SET, not a startup `options` (which PgBouncer refuses); a
        // server that does not know the setting (before 9.6) keeps its own behaviour.
        try? execute("SET idle_in_transaction_session_timeout = '\(Self.idleInTransactionSeconds)s'")
    }

    /// How long the server lets one of these sessions sit idle inside a transaction.
    static let idleInTransactionSeconds = 30

    deinit { close() }

    func close() {
        if let conn { PQfinish(conn) }
        conn = nil
        prepared.removeAll()
    }

    /// Whether an idle connection is still open: the server says it closes one (a shutdown, an
    /// idle timeout) before it does, so a readable socket is read, without waiting, to find out.
    var isStillOpen: Bool {
        guard let conn, PQstatus(conn) == CONNECTION_OK else { return false }
        var fds = pollfd(fd: PQsocket(conn), events: Int16(POLLIN), revents: 0)
        guard poll(&fds, 1, 0) > 0 else { return true }
        return PQconsumeInput(conn) == 1 && PQstatus(conn) == CONNECTION_OK && fds.revents & Int16(POLLHUP) == 0
    }

    /// False once the server or the network dropped the connection: the pool discards it.
    var isHealthy: Bool { conn.map { PQstatus($0) == CONNECTION_OK } ?? false }

    private func handle() throws(PostgresError) -> OpaquePointer {
        guard let conn, PQstatus(conn) == CONNECTION_OK else {
            throw PostgresError("the connection was lost", connectionLost: true)
        }
        return conn
    }

    /// Runs SQL without parameters (DDL, transaction control; several statements allowed).
    func execute(_ sql: String) throws(PostgresError) {
        let c = try handle()
        _ = try check(PQexec(c, sql), c)
    }

    /// Runs a fixed statement, prepared on first use on this connection.
    @discardableResult
    func query(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> PostgresRows {
        try query(sql, values: parameters.map(PostgresValue.text))
    }

    /// `query`, with parameters that may be raw bytes (a large `text` value sent as it is).
    @discardableResult
    func query(_ sql: String, values: [PostgresValue]) throws(PostgresError) -> PostgresRows {
        let c = try handle()
        let name: String
        if let known = prepared[sql] {
            name = known
        } else {
            name = "p\(prepared.count + 1)"
            _ = try check(PQprepare(c, name, sql, Int32(values.count), nil), c)
            prepared[sql] = name
        }
        let result = withValues(values) { pointers, lengths, formats in
            PQexecPrepared(c, name, Int32(values.count), pointers, lengths, formats, 0)
        }
        return try check(result, c)
    }

    /// Runs a statement whose text varies (an audience's compiled tag expression): planned for
    /// these parameter values, not kept.
    @discardableResult
    func queryOnce(_ sql: String, _ parameters: [String?]) throws(PostgresError) -> PostgresRows {
        let c = try handle()
        let result = withValues(parameters.map(PostgresValue.text)) { pointers, lengths, formats in
            PQexecParams(c, sql, Int32(parameters.count), nil, pointers, lengths, formats, 0)
        }
        return try check(result, c)
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            if isHealthy { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// `COPY … FROM STDIN`: `body` sends the data (text format) through the function it is
    /// given; when `body` throws, the COPY is abandoned (nothing of it stays) and the error
    /// rethrown. Returns the rows copied.
    @discardableResult
    func copyIn(_ sql: String, _ body: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws -> Int {
        let c = try handle()
        guard let start = PQexec(c, sql) else { throw PostgresError(Self.trimmed(PQerrorMessage(c)), connectionLost: !isHealthy) }
        let status = PQresultStatus(start)
        if status != PGRES_COPY_IN {
            _ = try check(start, c)
            throw PostgresError("COPY did not start")
        }
        PQclear(start)
        do {
            try body { bytes throws(PostgresError) in
                guard bytes.count > 0 else { return }
                let sent = PQputCopyData(c, bytes.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
                guard sent == 1 else { throw PostgresError(Self.trimmed(PQerrorMessage(c)), connectionLost: !self.isHealthy) }
            }
        } catch {
            _ = PQputCopyEnd(c, "abandoned by pushspool")
            while let r = PQgetResult(c) { PQclear(r) }
            throw error
        }
        guard PQputCopyEnd(c, nil) == 1 else { throw PostgresError(Self.trimmed(PQerrorMessage(c)), connectionLost: !isHealthy) }
        var rows = 0
        var failure: PostgresError?
        while let r = PQgetResult(c) {
            do {
                let checked = try check(r, c)
                rows = checked.affected
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
        return rows
    }

    /// Waits up to `timeout` seconds for notifications on channels this connection `LISTEN`s
    /// to, or until `stop` is set; returns their payloads (empty: none came). Throws when the
    /// connection was lost.
    func notifications(timeout: Double, stop: StopEvent? = nil) throws(PostgresError) -> [String] {
        let c = try handle()
        var payloads = drainNotifications(c)
        if !payloads.isEmpty { return payloads }
        var fds = [pollfd(fd: PQsocket(c), events: Int16(POLLIN), revents: 0), pollfd(fd: stop?.fd ?? -1, events: Int16(POLLIN), revents: 0)]
        let ready = poll(&fds, 2, Int32(max(0, min(timeout, 86_400)) * 1000))
        if ready > 0, fds[0].revents != 0 {
            guard PQconsumeInput(c) == 1 else {
                throw PostgresError(Self.trimmed(PQerrorMessage(c)), connectionLost: PQstatus(c) != CONNECTION_OK)
            }
            payloads = drainNotifications(c)
        }
        if PQstatus(c) != CONNECTION_OK { throw PostgresError("the connection was lost", connectionLost: true) }
        return payloads
    }

    private func drainNotifications(_ c: OpaquePointer) -> [String] {
        var payloads: [String] = []
        while let n = PQnotifies(c) {
            payloads.append(String(cString: n.pointee.extra))
            PQfreemem(n)
        }
        return payloads
    }

    /// Wraps a result, or throws its error (freeing it).
    private func check(_ result: OpaquePointer?, _ c: OpaquePointer) throws(PostgresError) -> PostgresRows {
        guard let result else {
            throw PostgresError(Self.trimmed(PQerrorMessage(c)), connectionLost: PQstatus(c) != CONNECTION_OK)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY, PGRES_COPY_IN:
            return PostgresRows(result)
        default:
            let message = Self.trimmed(PQresultErrorMessage(result))
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            PQclear(result)
            throw PostgresError(message.isEmpty ? Self.trimmed(PQerrorMessage(c)) : message, sqlState: state,
                                connectionLost: PQstatus(c) != CONNECTION_OK)
        }
    }

    static func trimmed(_ p: UnsafePointer<CChar>?) -> String {
        guard let p else { return "" }
        // libpq's messages run over several lines, continuations indented with a tab.
        return String(cString: p).split(whereSeparator: { $0 == "\n" })
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
    }
}

/// Rows of one result (text format), freed with the value.
final class PostgresRows {
    private let result: OpaquePointer

    init(_ result: OpaquePointer) { self.result = result }
    deinit { PQclear(result) }

    var count: Int { Int(PQntuples(result)) }
    var columns: Int { Int(PQnfields(result)) }
    /// Rows changed by an INSERT/UPDATE/DELETE/COPY.
    var affected: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }

    func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(result, Int32(row), Int32(column)) == 1 }

    func text(_ row: Int, _ column: Int) -> String? {
        if isNull(row, column) { return nil }
        let length = Int(PQgetlength(result, Int32(row), Int32(column)))
        return PQgetvalue(result, Int32(row), Int32(column)).withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    /// The raw bytes of a value (valid while this value lives).
    func bytes(_ row: Int, _ column: Int) -> UnsafeBufferPointer<UInt8> {
        let length = Int(PQgetlength(result, Int32(row), Int32(column)))
        return PQgetvalue(result, Int32(row), Int32(column)).withMemoryRebound(to: UInt8.self, capacity: length) {
            UnsafeBufferPointer(start: $0, count: length)
        }
    }

    func int64(_ row: Int, _ column: Int) -> Int64 { text(row, column).flatMap { Int64($0) } ?? 0 }
    func double(_ row: Int, _ column: Int) -> Double { text(row, column).flatMap { Double($0) } ?? 0 }
}

/// NUL-terminated copies of `strings` (plus a terminating NULL), alive while `body` runs.
func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// A parameter of `PostgresConnection.query(_:values:)`.
enum PostgresValue: Sendable {
    /// Text the server parses (nil: NULL).
    case text(String?)
    /// Bytes sent as they are, in binary format: for a `text` parameter, its UTF-8. A batch of
    /// outcome lines goes this way: no copy into a String and a C string, no length scan.
    case bytes([UInt8])
}

/// Values as libpq takes them (pointers, lengths, formats), alive while `body` runs: text as C
/// strings (nil: SQL NULL), bytes in place.
private func withValues<T>(_ values: [PostgresValue],
                           _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> T) -> T {
    var pointers = [UnsafePointer<CChar>?](repeating: nil, count: values.count)
    var lengths = [Int32](repeating: 0, count: values.count)
    var formats = [Int32](repeating: 0, count: values.count)
    var copies: [UnsafeMutablePointer<CChar>] = []
    defer { copies.forEach { free($0) } }
    func pinned(from i: Int) -> T {
        guard i < values.count else {
            return pointers.withUnsafeBufferPointer { p in
                lengths.withUnsafeBufferPointer { l in formats.withUnsafeBufferPointer { f in body(p.baseAddress, l.baseAddress, f.baseAddress) } }
            }
        }
        switch values[i] {
        case .text(let text):
            if let text, let copy = strdup(text) {
                copies.append(copy)
                pointers[i] = UnsafePointer(copy)
            }
            return pinned(from: i + 1)
        case .bytes(let bytes):
            // A NULL pointer would be SQL NULL: an empty value points at a C string's terminator.
            guard !bytes.isEmpty else { return "".withCString { empty in pointers[i] = empty; return pinned(from: i + 1) } }
            lengths[i] = Int32(bytes.count)
            formats[i] = 1
            return bytes.withUnsafeBytes { raw in
                pointers[i] = raw.baseAddress!.assumingMemoryBound(to: CChar.self)
                return pinned(from: i + 1)
            }
        }
    }
    return pinned(from: 0)
}
