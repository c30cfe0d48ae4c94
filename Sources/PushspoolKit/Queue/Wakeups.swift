import Foundation

/// Wakes every waiter at once (a notification came); a waiter that started before the last
/// wake-up returns at once.
final class Wakeups: @unchecked Sendable {   // the condition guards `generation`
    private let condition = NSCondition()
    private var generation = 0

    var current: Int {
        condition.lock()
        defer { condition.unlock() }
        return generation
    }

    func signal() {
        condition.lock()
        generation += 1
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until a wake-up after `seen`, or `timeout` seconds; `stopping` is asked before it
    /// sleeps (a stop is a wake-up: `ChunkWorker.stop` signals). Returns the generation then.
    @discardableResult
    func wait(after seen: Int, timeout: Double, stopping: () -> Bool = { false }) -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while generation == seen, Date() < deadline, !stopping() {
            _ = condition.wait(until: deadline)
        }
        return generation
    }
}
