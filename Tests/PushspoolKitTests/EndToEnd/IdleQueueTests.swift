import Foundation
import Testing
@testable import PushspoolKit

/// An idle `run` on the shared queue makes no database statement: it sleeps on its `LISTEN`
/// connection, and wakes only at a notification or at a lease it knows runs out. Statements are
/// counted from the server's own log (`log_statement = all` on a cluster of the test's own).
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"), .serialized)
struct IdleQueueTests {
    /// The statements the server logged since `offset` in its log (each `statement:` or `execute`
    /// line), and the log's end.
    static func statements(in cluster: PostgresCluster, since offset: Int) -> (lines: [String], end: Int) {
        let log = Array(cluster.log.utf8)
        let tail = String(decoding: log[min(offset, log.count)...], as: UTF8.self)
        let lines = tail.split(separator: "\n").map(String.init).filter { $0.contains("LOG:  statement:") || $0.contains("LOG:  execute") }
        return (lines, log.count)
    }

    @Test func anIdleRunMakesNoStatementBeforeOrAfterAJob() throws {
        let cluster = try PostgresCluster()
        try cluster.start()
        defer { cluster.stop() }
        let uri = try cluster.createDatabase()
        let name = try #require(URLComponents(string: uri)?.path.split(separator: "/").last)
        let admin = try PostgresConnection(uri: cluster.adminURI)
        try admin.execute("ALTER DATABASE \(name) SET log_statement = 'all'")
        try admin.execute("ALTER DATABASE \(name) SET log_min_messages = 'log'")
        admin.close()

        let lease = 3
        let h = try SharedQueueHarness(hosts: ["a", "b"], devices: 600, chunkSize: 100, lease: lease, concurrency: 16, delayMS: 5, uri: uri)
        try h.start()
        // Started: each host reported, took its presence lock and found nothing to do.
        Thread.sleep(forTimeInterval: Double(2 * lease))
        var mark = Self.statements(in: cluster, since: 0).end
        Thread.sleep(forTimeInterval: Double(3 * lease))
        let beforeJob = Self.statements(in: cluster, since: mark)
        #expect(beforeJob.lines.isEmpty, "\(beforeJob.lines.count) statements while idle before any job:\n\(beforeJob.lines.prefix(20).joined(separator: "\n"))")

        // A job both hosts share, then nothing: once its last chunk is in, its last report
        // made and its summary written, the hosts sleep again.
        try h.drop(on: "a", "everyone", #"{"id":"everyone","to_tag":"all","pns":["fcm"],"message":"hello"}"#)
        let summary = try #require(h.waitForSummary(on: "a", "everyone", timeout: 60), "a: \(h.log("a").suffix(2000))")
        #expect((summary["delivered"] as? NSNumber)?.intValue == 600)
        // The log does show statements when there is work (the count is not vacuous).
        let duringJob = Self.statements(in: cluster, since: beforeJob.end)
        #expect(duringJob.lines.count > 10, "\(duringJob.lines.count) statements logged while the job ran")
        Thread.sleep(forTimeInterval: Double(2 * lease))
        mark = Self.statements(in: cluster, since: 0).end
        Thread.sleep(forTimeInterval: Double(3 * lease))
        let afterJob = Self.statements(in: cluster, since: mark)
        #expect(afterJob.lines.isEmpty, "\(afterJob.lines.count) statements while idle after a job:\n\(afterJob.lines.prefix(20).joined(separator: "\n"))")
        print("idle run on the shared queue: \(beforeJob.lines.count) statements in \(3 * lease) s before a job, \(afterJob.lines.count) after")

        // Both hosts are still seen: their presence needs no statement.
        let status = try h.cli("b", ["status", "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let queue = (try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["queue"] as? [String: Any]
        let hosts = queue?["hosts"] as? [[String: Any]] ?? []
        #expect(hosts.count == 2, "\(hosts)")
        #expect(hosts.allSatisfy { ($0["seen_s_ago"] as? NSNumber)?.doubleValue == 0 }, "\(hosts)")
        #expect(h.stopAll().values.allSatisfy { $0 == 0 })
    }
}
