import Dispatch
import PushspoolCore
import Synchronization

/// A provider's slots in the worker pool, shared by every job's producer: `take` blocks until a
/// slot is free, `release` gives one back. A producer that found none sleeps until `SlotCount`'s
/// `refill` are free (why: `SlotCount`), then each sleeper asks again.
///
/// The count is one atomic word (free slots in the low 32 bits, sleepers above), changed by
/// compare-and-swap: a take or a release is an atomic load and exchange, as a semaphore's was, and
/// never waits for a lock another thread holds. Behind a lock, a producer descheduled while
/// holding it (on a loaded machine) made every release of the recorder's batch wait for it.
/// Sleepers wait on a semaphore signalled once per sleeper woken, so a release that wakes nobody
/// makes no system call.
final class SlotGate: Sendable {
    private let initial: SlotCount
    private let word: Atomic<Int>
    private let bell = DispatchSemaphore(value: 0)

    init(capacity: Int) {
        initial = SlotCount(capacity: capacity)
        word = Atomic(Self.pack(initial))
    }

    /// A slot if one is free now, without waiting.
    func tryTake() -> Bool { update { $0.tryTake() } }

    /// A slot, waiting for it as the type says.
    func take() {
        while !update({ $0.take() }) { bell.wait() }
    }

    func release() {
        let woken = update { $0.release() }
        for _ in 0..<woken { bell.signal() }
    }

    /// `change` applied to the count as one atomic step: made on the count last read, and made
    /// again if another thread changed it meanwhile.
    private func update<Result>(_ change: (inout SlotCount) -> Result) -> Result {
        var old = word.load(ordering: .acquiring)
        while true {
            var count = initial.with(free: old & Self.freeMask, sleepers: old >> 32)
            let result = change(&count)
            let new = Self.pack(count)
            if new == old { return result }
            let (exchanged, current) = word.compareExchange(expected: old, desired: new, ordering: .acquiringAndReleasing)
            if exchanged { return result }
            old = current
        }
    }

    private static let freeMask = (1 << 32) - 1

    private static func pack(_ count: SlotCount) -> Int { count.sleepers << 32 | count.free }
}
