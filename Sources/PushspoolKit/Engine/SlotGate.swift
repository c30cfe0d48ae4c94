import Dispatch
import PushspoolCore
import Synchronization

/// A provider's slots in the worker pool, shared by every job's producer: `take` blocks until a
/// slot is free, `release` gives one back. A producer that found none sleeps until `SlotCount`'s
/// `refill` are free (why: `SlotCount`), then each sleeper asks again. The count lives under a
/// lock; sleepers wait on a semaphore signalled once per sleeper woken, so a release that wakes
/// nobody makes no system call.
final class SlotGate: Sendable {
    private let count: Mutex<SlotCount>
    private let bell = DispatchSemaphore(value: 0)

    init(capacity: Int) { count = Mutex(SlotCount(capacity: capacity)) }

    /// A slot if one is free now, without waiting.
    func tryTake() -> Bool { count.withLock { $0.tryTake() } }

    /// A slot, waiting for it as the type says.
    func take() {
        while !count.withLock({ $0.take() }) { bell.wait() }
    }

    func release() {
        let woken = count.withLock { $0.release() }
        for _ in 0..<woken { bell.signal() }
    }
}
