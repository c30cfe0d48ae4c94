import Foundation
import Testing
@testable import PushspoolKit

/// libpq through `PostgresConnection` and `PostgresPool`, against a throwaway cluster.
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
struct PostgresConnectionTests {
    func connect() throws -> PostgresConnection {
        try PostgresConnection(uri: try RegistryFixture.postgresDatabase())
    }

    @Test func parametersAreValuesNeverSQL() throws {
        let c = try connect()
        try c.execute("CREATE TABLE t(k text PRIMARY KEY, v text)")
        let hostile = "x'); DROP TABLE t; --"
        try c.query("INSERT INTO t(k, v) VALUES($1, $2)", [hostile, nil])
        try c.query("INSERT INTO t(k, v) VALUES($1, $2)", ["plain", "é\u{1F600}"])
        let rows = try c.query("SELECT k, v FROM t ORDER BY k", [])
        #expect(rows.count == 2)
        #expect(rows.text(0, 0) == "plain" && rows.text(0, 1) == "é\u{1F600}")
        #expect(rows.text(1, 0) == hostile && rows.isNull(1, 1))
    }

    @Test func errorsCarryTheirSQLState() throws {
        let c = try connect()
        try c.execute("CREATE TABLE t(k text PRIMARY KEY)")
        try c.query("INSERT INTO t VALUES($1)", ["a"])
        let error = #expect(throws: PostgresError.self) { try c.query("INSERT INTO t VALUES($1)", ["a"]) }
        #expect(error?.sqlState == "23505" && error?.isUniqueViolation == true && error?.connectionLost == false)
        let syntax = #expect(throws: PostgresError.self) { try c.execute("SELEC 1") }
        #expect(syntax?.sqlState == "42601")
        // The connection is still usable after an error.
        #expect(try c.query("SELECT count(*) FROM t").int64(0, 0) == 1)
    }

    /// A session left idle inside a transaction (its host cut off mid-transaction) is ended by
    /// the server, so its locks cannot hold every other host up.
    @Test func aSessionIdleInATransactionIsEndedByTheServer() throws {
        let c = try connect()
        #expect(try c.query("SELECT current_setting('idle_in_transaction_session_timeout')").text(0, 0) == "\(PostgresConnection.idleInTransactionSeconds)s")
        try c.execute("SET idle_in_transaction_session_timeout = '200ms'")   // the same rule, sooner
        try c.execute("BEGIN")
        try c.query("SELECT pg_advisory_xact_lock(46)")
        let other = try connect()
        let ended = pollUntil(timeout: 30, poll: 0.1) {
            (try? other.query("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 46").int64(0, 0)) == 0
        }
        #expect(ended, "the idle transaction's lock is still held")
        #expect(throws: PostgresError.self) { try c.query("SELECT 1") }
    }

    @Test func transactionsCommitOrRollBack() throws {
        let c = try connect()
        try c.execute("CREATE TABLE t(k text PRIMARY KEY)")
        _ = try c.transaction { try c.query("INSERT INTO t VALUES($1)", ["kept"]) }
        struct Boom: Error {}
        #expect(throws: Boom.self) { try c.transaction { try c.query("INSERT INTO t VALUES($1)", ["lost"]); throw Boom() } }
        #expect(try c.query("SELECT string_agg(k, ',') FROM t").text(0, 0) == "kept")
    }

    @Test func copyLoadsRowsAndAnAbandonedCopyLeavesNothing() throws {
        let c = try connect()
        try c.execute("CREATE TABLE t(k text, n int, tags text[])")
        let n = try c.copyIn("COPY t(k, n, tags) FROM STDIN") { send in
            for i in 0..<1000 {
                let line = Array("k\(i)\t\(i)\t{\"a\",\"NULL\"}\n".utf8)
                try line.withUnsafeBytes { try send($0) }
            }
        }
        #expect(n == 1000)
        let rows = try c.query("SELECT count(*), sum(n), bool_and(tags = ARRAY['a','NULL']) FROM t")
        #expect(rows.int64(0, 0) == 1000 && rows.int64(0, 1) == 499_500 && rows.text(0, 2) == "t")
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try c.copyIn("COPY t(k, n) FROM STDIN") { send in
                try Array("x\t1\n".utf8).withUnsafeBytes { try send($0) }
                throw Boom()
            }
        }
        #expect(try c.query("SELECT count(*) FROM t").int64(0, 0) == 1000)
    }

    @Test func poolLendsConnectionsToManyThreads() throws {
        let pool = PostgresPool(uri: try RegistryFixture.postgresDatabase(), maxConnections: 3)
        defer { pool.close() }
        try pool.withConnection { try $0.execute("CREATE TABLE t(n int)") }
        DispatchQueue.concurrentPerform(iterations: 40) { i in
            _ = try? pool.withConnection { c in try c.query("INSERT INTO t VALUES($1)", ["\(i)"]) }
        }
        #expect(try pool.withConnection { try $0.query("SELECT count(*), count(DISTINCT n) FROM t").int64(0, 1) } == 40)
    }

    @Test func unreachableServerIsAConnectionError() throws {
        let error = #expect(throws: PostgresError.self) {
            try PostgresConnection(uri: "postgresql:///x?host=/nonexistent-dir&port=1&connect_timeout=2")
        }
        #expect(error?.connectionLost == true)
    }
}
