import Dispatch
import Foundation
import Synchronization
import Testing
@testable import PushspoolKit

/// A sleeper on the `StopBell` waits for its monotonic deadline or a ring, whichever comes first.
@Suite struct StopBellTests {
    @Test func aDeadlinePassedEndsTheSleepAtOnceUnlessHalted() {
        #expect(StopBell.shared.sleep(until: DispatchTime.now(), halted: { false }))
        #expect(!StopBell.shared.sleep(until: DispatchTime.now(), halted: { true }))
        // A moment on the monotonic clock that has passed, as the send path's callers name one.
        #expect(StopBell.shared.sleep(untilUptime: 0, halted: { false }))
    }

    /// With no deadline in sight, only the ring can end the sleep: this test would hang without it.
    @Test func aRingWakesASleeperWhoseConditionChanged() {
        let halted = Atomic<Bool>(false)
        let answer = Mutex<Bool?>(nil)
        let done = DispatchSemaphore(value: 0), asked = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let slept = StopBell.shared.sleep(until: .distantFuture) {
                asked.signal()
                return halted.load(ordering: .acquiring)
            }
            answer.withLock { $0 = slept }
            done.signal()
        }
        // It asks once before it listens for rings (nothing to wait for?) and once after: past
        // that second question, only a ring makes it ask again.
        asked.wait()
        asked.wait()
        halted.store(true, ordering: .releasing)
        StopBell.shared.ring()
        done.wait()
        #expect(answer.withLock { $0 } == false, "halted, not due")
    }
}
