import Foundation
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
final class StopBell: @unchecked Sendable {   // `condition` guards `rings`; `observers` is a Mutex
    static let shared = StopBell()

    private let condition = NSCondition()
    private var rings = 0
    private let observers = Mutex<(next: Int, all: [Int: @Sendable () -> Void])>((0, [:]))

    /// Wakes every sleeper and tells every observer.
    func ring() {
        condition.lock()
        rings &+= 1
        condition.broadcast()
        condition.unlock()
        for observer in observers.withLock({ Array($0.all.values) }) { observer() }
    }

    /// Sleeps until `moment` (seconds since 1970) or until `halted` says so (asked first, and
    /// again after each ring). True once the moment came, false when halted.
    func sleep(until moment: Double, halted: () -> Bool) -> Bool {
        while true {
            // The ring count is read before the question: a ring between the question and the
            // wait ends the wait at once instead of being missed.
            let seen = ringCount
            if halted() { return false }
            if moment <= Date().timeIntervalSince1970 { return true }
            condition.lock()
            while rings == seen, condition.wait(until: Date(timeIntervalSince1970: moment)) {}
            condition.unlock()
        }
    }

    private var ringCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return rings
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
