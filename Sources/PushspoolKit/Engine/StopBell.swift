import Foundation
import Dispatch
import Synchronization

/// What wakes a waiter early: rung whenever something that can halt waiting work changes (the
/// dispatcher or the engine stops, an operator's cancel or pause lands in `control/`, a chunk of
/// the shared queue is lost or its job is steered). A waiter sleeps until the moment it waits
/// for (a retry's due time, the rate cap's next token, the end of a provider's quiet time) or
/// until a ring, whichever comes first, and then asks its own stop condition again: nothing
/// wakes to look at a flag every so often.
///
/// One per process: the conditions it stands for are closures composed in many places (the
/// engine's, a job's controls, a chunk's lease), and a ring only makes each waiter ask its own
/// again, which costs a lock and a load per waiter.
///
/// A sleeper waits on a monotonic deadline (`DispatchTime`), so a wall clock set back or forward
/// meanwhile neither stretches nor cuts its wait.
final class StopBell: Sendable {
    static let shared = StopBell()

    private let observers = Mutex<(next: Int, all: [Int: @Sendable () -> Void])>((0, [:]))

    /// Wakes every sleeper and tells every observer.
    func ring() {
        for observer in observers.withLock({ Array($0.all.values) }) { observer() }
    }

    /// Sleeps until `deadline` or until `halted` says so (asked first, and again after each
    /// ring). True once the deadline came, false when halted.
    func sleep(until deadline: DispatchTime, halted: () -> Bool) -> Bool {
        // Nothing to wait for (a rate cap's turn that has come): no listener made.
        if halted() { return false }
        if DispatchTime.now() >= deadline { return true }
        // Listening before the question: a ring between the question and the wait ends the
        // wait at once instead of being missed (the semaphore keeps it).
        let rung = DispatchSemaphore(value: 0)
        let token = observe { rung.signal() }
        defer { unobserve(token) }
        while true {
            if halted() { return false }
            if DispatchTime.now() >= deadline { return true }
            _ = rung.wait(timeout: deadline)
        }
    }

    /// Sleeps until `moment`, in `Uptime` seconds (the send path's due times: a rate cap's turn,
    /// a job's pacing, a provider's quiet time), or until halted.
    func sleep(untilUptime moment: Double, halted: () -> Bool) -> Bool {
        sleep(until: Uptime.deadline(moment), halted: halted)
    }

    /// Calls `observer` (on the ringing thread) at each ring until `unobserve` with the token.
    func observe(_ observer: @escaping @Sendable () -> Void) -> Int {
        observers.withLock { o in
            o.next += 1
            o.all[o.next] = observer
            return o.next
        }
    }

    func unobserve(_ token: Int) { _ = observers.withLock { $0.all.removeValue(forKey: token) } }
}
