import Dispatch
import Synchronization
import Testing
@testable import PushspoolKit

/// The queue's two waits on events: `Wakeups` (an origin waiting for a notification) and
/// `QueueAlarm` (the one timer for the earliest due time). Each test waits on what it expects
/// to happen; its bound is a safety net against a hang, never a measure.
struct QueueWaitersTests {
    @Test(.timeLimit(.minutes(1))) func aWaiterThatStartedBeforeTheLastWakeUpReturnsAtOnce() {
        let wakeups = Wakeups()
        let seen = wakeups.current
        wakeups.signal()
        #expect(wakeups.wait(after: seen, timeout: 3600) == seen + 1)
    }

    @Test(.timeLimit(.minutes(1))) func oneSignalWakesEveryWaiter() {
        let wakeups = Wakeups()
        let seen = wakeups.current
        let woke = DispatchGroup()
        let results = Results()
        for _ in 0..<3 {
            DispatchQueue.global().async(group: woke) { results.add(wakeups.wait(after: seen, timeout: 3600)) }
        }
        wakeups.signal()
        woke.wait()
        #expect(results.all == [seen + 1, seen + 1, seen + 1])
    }

    @Test(.timeLimit(.minutes(1))) func aStopIsAskedBeforeItSleepsAndAQuietTimeoutEndsTheWait() {
        let wakeups = Wakeups()
        let seen = wakeups.current
        #expect(wakeups.wait(after: seen, timeout: 3600, stopping: { true }) == seen)
        #expect(wakeups.wait(after: seen, timeout: 0.01) == seen)
    }

    /// With no timeout a waiter sleeps until a wake-up or a ring of the `StopBell` (a cancel or
    /// pause landing in `control/`, a stop), which an origin then asks its job about.
    @Test(.timeLimit(.minutes(1))) func aRingEndsAWaitWithoutTimeout() {
        let wakeups = Wakeups()
        let seen = wakeups.current
        let sleeping = DispatchSemaphore(value: 0), woke = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            // `stopping` is asked once the waiter listens for rings: a ring from then on is kept.
            wakeups.wait(after: seen, stopping: { sleeping.signal(); return false })
            woke.signal()
        }
        sleeping.wait()
        StopBell.shared.ring()
        woke.wait()
        #expect(wakeups.current == seen)
    }

    @Test(.timeLimit(.minutes(1))) func theAlarmFiresAtTheEarliestTimeAskedThenDisarms() {
        let alarm = QueueAlarm(queue: DispatchQueue(label: "test.alarm"))
        let fired = DispatchSemaphore(value: 0)
        alarm.onFire { fired.signal() }
        #expect(!alarm.isArmed)
        alarm.wake(in: 3600)
        #expect(alarm.isArmed)
        // Sooner wins; a later time asked meanwhile changes nothing.
        alarm.wake(in: 0.01)
        alarm.wake(in: 1800)
        fired.wait()
        #expect(!alarm.isArmed)
        alarm.cancel()
        alarm.wake(in: 0)
        #expect(!alarm.isArmed)
    }

    private final class Results: Sendable {
        private let values = Mutex<[Int]>([])
        func add(_ v: Int) { values.withLock { $0.append(v) } }
        var all: [Int] { values.withLock { $0 } }
    }
}
