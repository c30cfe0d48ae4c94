import Dispatch
import Synchronization

/// Wakes every waiter at once (a notification came); a waiter that started before the last
/// wake-up returns at once. Each waiter sleeps on a semaphore of its own, its timeout counted
/// on the monotonic clock (`DispatchTime`): moving the wall clock neither wakes nor delays it.
final class Wakeups: Sendable {
    private struct State {
        var generation = 0
        var waiters: [ObjectIdentifier: DispatchSemaphore] = [:]
    }
    private let state = Mutex(State())

    var current: Int { state.withLock { $0.generation } }

    func signal() {
        let woken = state.withLock { s -> [DispatchSemaphore] in
            s.generation += 1
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for semaphore in woken { semaphore.signal() }
    }

    /// Waits until a wake-up after `seen`, a ring of the `StopBell` (a stop, a cancel or pause
    /// landing in `control/`), or `timeout` seconds when one is given; `stopping` is asked before
    /// it sleeps (a stop is a wake-up: `ChunkWorker.stop` signals). Returns the generation then.
    @discardableResult
    func wait(after seen: Int, timeout: Double? = nil, stopping: () -> Bool = { false }) -> Int {
        let semaphore = DispatchSemaphore(value: 0)
        let id = ObjectIdentifier(semaphore)
        let sleeps = state.withLock { s -> Bool in
            guard s.generation == seen else { return false }
            s.waiters[id] = semaphore
            return true
        }
        guard sleeps else { return current }
        let ring = StopBell.shared.observe { semaphore.signal() }
        if !stopping() { _ = semaphore.wait(timeout: timeout.map { .now() + max(0, $0) } ?? .distantFuture) }
        StopBell.shared.unobserve(ring)
        state.withLock { s in s.waiters[id] = nil }
        return current
    }
}
