import Foundation
import Testing
@testable import PushspoolKit

/// A host cut off from the database by the network (every packet dropped, nothing refused: a
/// partition, in a network namespace of the test's own) while it sends its share of a job.
@Suite(.serialized, .enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
struct SharedQueuePartitionTests {
    static func broadcast(_ id: String) -> String { #"{"id":"\#(id)","to_tag":"all","pns":["fcm"],"message":"hello"}"# }

    /// Cut off mid-job, host a stops sending (its requests in flight are the most it can send
    /// twice) and says so; host b takes its chunks once their lease ran out and the job ends
    /// with every device. When the network comes back, a works again. Cut off once more, it
    /// stops on SIGTERM once the statements it was waiting on gave up (10 s without an
    /// acknowledgement each: `tcp_user_timeout`; without it, they waited 15 minutes).
    @Test func aHostCutOffStopsItsChunksGoOnElsewhereAndItComesBack() throws {
        let ns = try NetworkNamespace.make()
        let inFlight = 32
        let h = try SharedQueueHarness(hosts: ["a", "b"], devices: 4000, chunkSize: 200, lease: 3, concurrency: inFlight)
        // a reaches the database over the namespace's network, through a door to its socket.
        let parts = try #require(URLComponents(string: h.uri))
        let item = { (name: String) in parts.queryItems?.first { $0.name == name }?.value ?? "" }
        let door = try FakeServer("pg-proxy", args: ["host": ns.inside, "target": "\(item("host"))/.s.PGSQL.\(item("port"))"],
                                  dir: h.dir, launcher: ns.exec)
        let overTheNetwork = "postgresql://postgres@\(ns.inside):\(door.port)\(parts.path)"
        h.dir.write("a.json", try #require(h.dir.read("a.json")).replacingOccurrences(of: "env:PUSHSPOOL_TEST_REGISTRY", with: overTheNetwork))
        try h.start()
        let a = try #require(h.queueName("a"))
        let heldByA = { () -> Int in
            let n = (try? h.query("SELECT count(*) FROM queue_chunks WHERE host = $1 AND NOT done", [a]))?.first?.first ?? nil
            return Int(n ?? "0") ?? 0
        }

        try h.drop(on: "b", "first", Self.broadcast("first"))
        eventually("a to hold a chunk", timeout: 30) { heldByA() > 0 }
        Thread.sleep(forTimeInterval: 0.3)
        try ns.cut()
        let summary = try #require(h.waitForSummary(on: "b", "first", timeout: 120), "b: \(h.log("b").suffix(2000))")
        #expect((summary["delivered"] as? NSNumber)?.intValue == 4000, "\(summary)")
        let perToken = h.perToken()
        let twice = perToken.values.filter { $0 > 1 }.count
        #expect(perToken.count == 4000)
        #expect(twice <= inFlight, "\(twice) devices sent twice; a had \(inFlight) requests in flight at most")
        let takenOver = try h.query("SELECT count(*) FROM queue_chunks WHERE job = 'first' AND taken > 1").first?.first ?? nil
        #expect(Int(takenOver ?? "0") ?? 0 >= 1, "no chunk of a's went on elsewhere")
        eventually("a to say the queue cannot be reached", timeout: 60, lastSeen: { h.log("a").suffix(2000).description }) {
            h.log("a").contains("cannot be reached")
        }
        print("partition: \(twice) devices sent twice (bound \(inFlight)); \(takenOver ?? "?") chunks taken over")

        // The network back: a reaches the database again and takes its share of the next job.
        try ns.heal()
        eventually("a to reach the queue again", timeout: 60, lastSeen: { h.log("a").suffix(2000).description }) {
            h.log("a").contains("the shared queue answers again")
        }
        try h.drop(on: "b", "second", Self.broadcast("second"))
        let second = try #require(h.waitForSummary(on: "b", "second", timeout: 120), "b: \(h.log("b").suffix(2000))")
        #expect((second["delivered"] as? NSNumber)?.intValue == 4000, "\(second)")
        let shares = try h.chunksByHost("second")
        #expect(shares[a] ?? 0 > 0, "a took no chunk of the second job: \(shares)")

        // Cut off again, holding chunks of a third job: SIGTERM ends it, with status 0.
        try h.drop(on: "b", "third", Self.broadcast("third"))
        eventually("a to hold a chunk", timeout: 30) { heldByA() > 0 }
        try ns.cut()
        Thread.sleep(forTimeInterval: 1)
        let pid = try #require(h.pid("a"))
        let stopAt = Date()
        kill(pid, SIGTERM)
        let exited = pollUntil(timeout: 45, poll: 0.05) { h.runs["a"]?.isRunning == false }
        let took = Date().timeIntervalSince(stopAt)
        #expect(exited, "a still running \(Int(took)) s after SIGTERM: \(h.log("a").suffix(2000))")
        print("partition: a, cut off, exited \(String(format: "%.1f", took)) s after SIGTERM")
        if exited { #expect(h.runs["a"]?.terminationStatus == 0, "\(h.log("a").suffix(2000))") }
        let third = try #require(h.waitForSummary(on: "b", "third", timeout: 120), "b: \(h.log("b").suffix(2000))")
        #expect((third["delivered"] as? NSNumber)?.intValue == 4000, "\(third)")
        try ns.heal()
    }
}
