import Foundation
import Synchronization
import Testing
@testable import PushspoolServer

/// A campaign's page worked out once for every session polling it: within its lifetime an
/// answer is reused; later it is worked out again; while that runs, others take the last one.
@Suite struct CampaignAnswersTests {
    @Test func manyPollsOfOneCampaignCostOneComputationASecond() throws {
        let clock = Mutex(1_000.0)
        let answers = CampaignAnswers(lifetime: 1, staleness: 5)
        let computed = Mutex(0)
        func poll(_ id: String = "bf") -> Int {
            let r = answers.answer(id: id, now: { clock.withLock { $0 } }) {
                let n = computed.withLock { $0 += 1; return $0 }
                return .json(200, .object([("n", .int(Int64(n)))]))
            }
            guard case .bytes(let b) = r.body else { return -1 }
            return Int(String(decoding: b, as: UTF8.self).filter(\.isNumber)) ?? -1
        }
        #expect((0..<100).map { _ in poll() } == Array(repeating: 1, count: 100))
        clock.withLock { $0 += 0.9 }
        #expect(poll() == 1)
        clock.withLock { $0 += 0.2 }   // 1.1 s: worked out again, once
        #expect(poll() == 2 && poll() == 2)
        #expect(poll("other") == 3)    // another campaign has its own
        // While one is being worked out, a page with a recent answer is not kept waiting.
        clock.withLock { $0 += 2 }
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let slow = Thread {
            _ = answers.answer(id: "bf", now: { clock.withLock { $0 } }) {
                started.signal()
                release.wait()
                return .json(200, .object([("n", .int(99))]))
            }
        }
        slow.start()
        started.wait()
        #expect(poll() == 2)           // the last answer, 2 s old, while the next is worked out
        release.signal()
        var waited = 0
        while poll() != 99 && waited < 10_000 { usleep(1000); waited += 1 }
        #expect(poll() == 99 && computed.withLock { $0 } == 3)   // its answer, and nobody else worked one out
    }
}
