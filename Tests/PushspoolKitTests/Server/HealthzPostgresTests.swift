import Foundation
import Testing
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// `/healthz` on a PostgreSQL registry, through the real binary: the check reuses one of the
/// registry's pooled connections (no new session a second, as the probe of its own made) and its
/// answer serves the probes of the next second.
@Suite(.serialized, .enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
struct HealthzPostgresTests {
    /// Sessions the server has seen end on `uri`'s database (PostgreSQL 14+), read on a
    /// connection of its own (which counts once it ends).
    static func sessions(_ uri: String) throws -> Int {
        let c = try PostgresConnection(uri: uri)
        defer { c.close() }
        let rows = try c.queryOnce("SELECT sessions FROM pg_stat_database WHERE datname = current_database()", [])
        return Int(rows.text(0, 0) ?? "") ?? -1
    }

    @Test func healthzReusesAPooledConnection() throws {
        let cluster = try PostgresCluster.shared.get()
        let uri = try cluster.createDatabase("healthz")
        let s = try ServeLifecycleTests.Spool(top: #""registry": "\#(uri)","#)
        let serve = try s.serve()
        let c = try serve.client()
        #expect(try c.request("GET", "/healthz").status == 200)
        // Past the first answer's second, so that the next probes run checks.
        usleep(1_200_000)
        #expect(try c.request("GET", "/healthz").status == 200)
        usleep(300_000)
        let before = try Self.sessions(uri)
        // Four seconds of probes, ten a second: about four checks.
        for _ in 0..<40 {
            let a = try c.request("GET", "/healthz")
            #expect(a.status == 200, "\(a.text)")
            usleep(100_000)
        }
        usleep(500_000)   // a session's end reaches the statistics when it ends
        let after = try Self.sessions(uri)
        // The first reading's own session, and nothing else: no connection made per check.
        #expect(after - before <= 1, "\(after - before) sessions ended during 4 s of probes")
        #expect(ServeLifecycleTests.stop(serve, with: SIGTERM).status == 0)
    }
}
