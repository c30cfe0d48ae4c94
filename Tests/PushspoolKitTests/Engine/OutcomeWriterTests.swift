import Dispatch
import Foundation
import Synchronization
import Testing
import PushspoolCore
import PushspoolTestSupport
@testable import PushspoolKit

/// One host's outcome batches from several chunks at once, against a real PostgreSQL: each is
/// written once, in its chunk's order, and a chunk the host lost gets nil (its lines dropped).
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
struct OutcomeWriterTests {
    @Test func batchesOfChunksWrittenAtOnceAreEachRecordedOnceInOrder() throws {
        let (_, a, b) = try PostgresJobQueueTests.published(devices: 50)
        let mine = try a.claim(count: 4, lease: 30)
        let theirs = try #require(try b.claim(count: 1, lease: 30).first)
        #expect(mine.count == 4)
        let writer = OutcomeWriter(store: a)
        let rows = Mutex<[Int: [Int64]]>([:])
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: mine.count) { i in
            for k in 0..<40 {
                do {
                    guard let row = try writer.record(mine[i], lines: Array("{\"k\":\(k)}\n".utf8)) else {
                        failures.add(1, ordering: .relaxed)
                        return
                    }
                    rows.withLock { $0[mine[i].number, default: []].append(row) }
                } catch {
                    failures.add(1, ordering: .relaxed)
                    return
                }
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
        for chunk in mine {
            #expect(try a.lines(job: "j", chunk: chunk.number) == (0..<40).map { "{\"k\":\($0)}\n" })
            let written = rows.withLock { $0[chunk.number] ?? [] }
            #expect(written == written.sorted() && Set(written).count == 40)
        }
        #expect(try writer.record(theirs, lines: Array("{\"k\":0}\n".utf8)) == nil)
        #expect(try a.lines(job: "j", chunk: theirs.number).isEmpty)
    }
}
