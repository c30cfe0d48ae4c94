import Foundation
import Synchronization
import Testing
import PushspoolCore
import PushspoolTestSupport
@testable import PushspoolKit

/// A holder that stalls past its lease while another host takes its chunk over, against a real
/// PostgreSQL (two stores on one database stand in for two hosts, as in `PostgresJobQueueTests`):
/// its late batches are refused, also when one races the take-over, so no target is logged or
/// counted twice. Leases are ended by moving `lease_until` into the past on the database's own
/// clock, not by sleeping past them.
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
struct StaleHolderTests {
    /// Job `j` over 20 devices cut into chunks of 10, hosts a and b, and a connection of the test's own.
    static func published() throws -> (a: PostgresJobQueue, b: PostgresJobQueue, sql: PostgresConnection, uri: String) {
        let uri = try RegistryFixture.postgresDatabase()
        let registry = try PostgresRegistry(uri: uri)
        for i in 0..<20 { _ = try registry.upsert(Registration(id: "d\(i)", platform: .fcm, handle: "t\(i)", tags: ["all"])) }
        let a = PostgresJobQueue(uri: uri, host: "a/1"), b = PostgresJobQueue(uri: uri, host: "b/2")
        try a.publish(id: "j", body: PostgresJobQueueTests.body, jobLine: "{}", targets: 20, requests: false, devices: true)
        _ = try PostgresJobQueueTests.cutAll(a, registry, size: 10)
        return (a, b, try PostgresConnection(uri: uri), uri)
    }

    /// Ends the lease of chunk `n` now, as the time passing would (`ChunkLease.expire`).
    static func lapse(_ sql: PostgresConnection, chunk n: Int) throws {
        _ = try sql.query("UPDATE queue_chunks SET lease_until = clock_timestamp() - interval '1 second' WHERE job = 'j' AND chunk = $1::int", ["\(n)"])
    }

    /// Every outcome line recorded for the job, one per target.
    static func targets(_ q: PostgresJobQueue) throws -> [String] {
        let batches: [String] = try (0...2).flatMap { try q.lines(job: "j", chunk: $0) }
        return batches.flatMap { $0.split(separator: "\n").map(String.init) }
    }

    @Test func aHolderThatStalledPastItsLeaseRecordsNothingAfterATakeOver() throws {
        let (a, b, sql, _) = try Self.published()
        let mine = try #require(try a.claim(count: 1, lease: 30).first)
        #expect(mine.tookOverFrom == nil)
        #expect(try a.record(mine, lines: "d0\n"))
        // a stalls: its lease runs out. Lapsed, not yet taken over: still nothing more from a.
        try Self.lapse(sql, chunk: mine.number)
        #expect(try !a.record(mine, lines: "d1\n"))
        #expect(try a.renew([PostgresJobQueue.key("j", mine.number)], lease: 30, sent: 0, rate: 0).isEmpty)
        // b takes it over, naming a's claim, and reads back what a recorded as final.
        let taken = try #require(try b.claim(count: 1, lease: 30).first)
        #expect(taken.number == mine.number && taken.tookOverFrom == "a/1#1")
        #expect(try b.lines(job: "j", chunk: taken.number) == ["d0\n"])
        #expect(try b.record(taken, lines: "d1\nd2\n"))
        // a wakes up: neither its late batch, nor a completion, nor a release goes in.
        #expect(try !a.record(mine, lines: "d1\n"))
        #expect(try !a.complete(mine))
        try a.release(mine)
        #expect(try b.claim(count: 10, lease: 30).map(\.number) == [2])
        #expect(try b.complete(taken))
        let logged = try Self.targets(b)
        #expect(logged == ["d0", "d1", "d2"], "\(logged)")
    }

    /// a's batch arrives while b's take-over of the chunk is under way (its claim has the row,
    /// not yet committed): the batch waits for the row, then finds b the holder and is refused.
    /// Checked apart from the row's lock, it would have gone in unseen by b's read.
    @Test func aBatchRacingATakeOverWaitsForTheRowAndIsRefused() throws {
        let (a, b, sql, uri) = try Self.published()
        let mine = try #require(try a.claim(count: 1, lease: 30).first)
        // b's claim, held open: the row locked as the claim locks it, and become b's.
        try sql.execute("BEGIN")
        _ = try sql.query("SELECT 1 FROM queue_chunks WHERE job = 'j' AND chunk = $1::int FOR UPDATE", ["\(mine.number)"])
        _ = try sql.query("""
            UPDATE queue_chunks SET host = 'b/2', taken = taken + 1, lease_until = clock_timestamp() + interval '30 seconds'
            WHERE job = 'j' AND chunk = $1::int
            """, ["\(mine.number)"])
        final class Answer: Sendable { let recorded = Mutex<Bool?>(nil) }
        let answer = Answer()
        Thread {
            let recorded = (try? a.record(mine, lines: "d1\n")) ?? false
            answer.recorded.withLock { $0 = recorded }
        }.start()
        let watcher = try PostgresConnection(uri: uri)
        try eventually("a's batch to wait for the row b's claim holds") {
            try watcher.query("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO queue_outcomes%'")
                .int64(0, 0) == 1
        }
        #expect(answer.recorded.withLock { $0 } == nil)
        try sql.execute("COMMIT")
        eventually("a's batch to be answered") { answer.recorded.withLock { $0 } != nil }
        #expect(answer.recorded.withLock { $0 } == false)
        #expect(try Self.targets(b).isEmpty)
    }
}
