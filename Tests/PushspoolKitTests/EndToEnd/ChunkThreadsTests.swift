import Foundation
import Testing
@testable import PushspoolKit

/// A host works its chunks on Dispatch's reused threads, not on a thread made for each chunk
/// (`ChunkWorker`). One `run` sends a job of many small chunks to a fake FCM that answers after
/// 20 ms, `max_chunks` 4 at once; its threads are read from /proc/<pid>/task all along. The
/// threads it made for the job stay within a bound that does not grow with the number of chunks
/// (a thread per chunk made one for each of the 80).
@Suite(.enabled(if: PostgresCluster.isAvailable && FileManager.default.fileExists(atPath: "/proc/self/task"),
                "\(PostgresCluster.unavailableReason ?? "no /proc")"), .serialized)
struct ChunkThreadsTests {
    @Test func aHostWorkingManyChunksMakesNoThreadPerChunk() throws {
        let chunks = 80, chunkSize = 3
        let h = try SharedQueueHarness(hosts: ["a"], devices: chunks * chunkSize, chunkSize: chunkSize, delayMS: 20)
        try h.start()
        let pid = try #require(h.pid("a"))
        let before = Self.threads(of: pid)
        try h.drop(on: "a", "everyone", SharedQueueTests.broadcast)
        var seen = before
        let ended = pollUntil(timeout: 120, poll: 0.002) {
            seen.formUnion(Self.threads(of: pid))
            return h.dir.read("a/results/everyone.jsonl")?.contains(#""summary""#) == true
        }
        let statuses = h.stopAll()
        try #require(ended, "the job did not end: \(h.log("a").suffix(2000))")
        #expect(statuses.values.allSatisfy { $0 == 0 }, "\(statuses)")
        #expect(h.deliveries(on: "a", "everyone").count == chunks * chunkSize)
        #expect(try h.chunksByHost("everyone").values.reduce(0, +) == chunks)
        // What the job needs beside its chunks (the origin's job, the provider's connection, the
        // retry timers' and the recorder's Dispatch threads) and up to `max_chunks` chunk work
        // items at once, with room to spare; never one per chunk.
        let made = seen.subtracting(before)
        print("\(chunks) chunks on one host: \(made.count) threads made for the job (\(before.count) before it)")
        #expect(made.count <= 24, "\(made.count) threads made for \(chunks) chunks (\(before.count) before the job)")
    }

    /// The ids of a process's threads now.
    static func threads(of pid: Int32) -> Set<Int32> {
        Set(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []).compactMap { Int32($0) })
    }
}
