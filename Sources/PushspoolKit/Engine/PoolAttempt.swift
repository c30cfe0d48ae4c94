import Dispatch
import PushspoolCore
import Synchronization

/// One attempt of the worker pool's in flight: everything its answer needs, in one object. The
/// provider's completion captures this object alone (a closure whose only capture is one object
/// uses it as its context: no allocation), and the watchdog's table holds it, so an attempt costs
/// one allocation, not a closure per layer that hands its answer on.
final class PoolAttempt: Sendable {
    let pool: WorkerPool
    let operation: WorkerPool.Operation
    let state: ProviderState
    /// The disposition of the attempt before it (the policy's backoff follows it); nil: first.
    let previous: Disposition?
    let isStopping: @Sendable () -> Bool
    let done: WorkerPool.Done
    /// When it began, in `DispatchTime` nanoseconds.
    let started: UInt64
    /// Its slot in the watchdog's table while it waits (-1: not yet watched). Written before the
    /// request leaves, read when the answer comes.
    let slot = Atomic<Int>(-1)

    init(pool: WorkerPool, operation: WorkerPool.Operation, state: ProviderState, previous: Disposition?,
         isStopping: @escaping @Sendable () -> Bool, done: WorkerPool.Done) {
        self.pool = pool
        self.operation = operation
        self.state = state
        self.previous = previous
        self.isStopping = isStopping
        self.done = done
        started = DispatchTime.now().uptimeNanoseconds
    }

    /// The provider's answer: settled unless the watchdog settled it already.
    func answered(_ result: ProviderResult) {
        if pool.watchdog.answered(self) { pool.settle(self, result) }
    }
}
