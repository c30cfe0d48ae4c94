import Dispatch
import Foundation
import Synchronization

/// The worker pool's waiting retries, on one Dispatch timer armed for the earliest of them: each
/// runs at its due time, and none wakes before (a retry waiting out an hour's Retry-After costs
/// nothing meanwhile). A `StopBell` ring asks each waiting retry whether its job is stopping;
/// those that are end at once as abandoned, so a long wait never holds up a stop. Due times are
/// monotonic (`Uptime` seconds, the timer's own clock): a wall clock stepped meanwhile neither
/// stalls nor rushes a retry.
final class RetryTimer: @unchecked Sendable {   // `timer` is touched only under `state`'s lock (and in deinit)
    private struct Waiting {
        var due: Double
        var order: Int
        var run: @Sendable () -> Void
        var abandon: @Sendable () -> Void
        var isStopping: @Sendable () -> Bool
    }
    private struct State {
        /// The earliest (due, order) on top.
        var heap = BinaryHeap<Waiting>(before: RetryTimer.before)
        var added = 0
        /// When the timer is armed for (`Uptime` seconds); nil: disarmed.
        var armedFor: Double?
    }
    private let state = Mutex(State())
    private let queue: DispatchQueue
    private let timer: any DispatchSourceTimer
    private var bellToken = 0

    /// `queue`: where due and abandoned retries run.
    init(queue: DispatchQueue) {
        self.queue = queue
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [weak self] in self?.fire() }
        timer.schedule(deadline: .distantFuture)
        timer.resume()
        bellToken = StopBell.shared.observe { [weak self] in self?.sweepStopping() }
    }

    deinit {
        StopBell.shared.unobserve(bellToken)
        timer.cancel()
    }

    /// Runs `run` at `due` (`Uptime` seconds) on the queue, or `abandon` instead once
    /// `isStopping` says so at a ring.
    func schedule(at due: Double, isStopping: @escaping @Sendable () -> Bool,
                  abandon: @escaping @Sendable () -> Void, run: @escaping @Sendable () -> Void) {
        state.withLock { s in
            s.added += 1
            s.heap.push(Waiting(due: due, order: s.added, run: run, abandon: abandon, isStopping: isStopping))
            arm(&s)
        }
    }

    /// How many retries wait.
    var count: Int { state.withLock { $0.heap.count } }

    private func fire() {
        let now = Uptime.seconds
        let due = state.withLock { s -> [Waiting] in
            var due: [Waiting] = []
            while let first = s.heap.top, first.due <= now { due.append(s.heap.pop()) }
            s.armedFor = nil
            arm(&s)
            return due
        }
        for w in due { w.run() }
    }

    /// At a ring: the retries whose jobs stop now end as abandoned.
    private func sweepStopping() {
        // Asked outside the lock: a job's stop condition may take locks of its own.
        let waiting = state.withLock { s in s.heap.items.map { ($0.order, $0.isStopping) } }
        let stopping = Set(waiting.lazy.filter { $0.1() }.map(\.0))
        guard !stopping.isEmpty else { return }
        let gone = state.withLock { s -> [Waiting] in
            let gone = s.heap.items.filter { stopping.contains($0.order) }
            let kept = s.heap.items.filter { !stopping.contains($0.order) }
            s.heap = BinaryHeap(before: RetryTimer.before)
            for w in kept { s.heap.push(w) }
            return gone
        }
        for w in gone { queue.async { w.abandon() } }
    }

    /// Arms the timer for the earliest retry, unless armed for it already.
    private func arm(_ s: inout State) {
        guard let earliest = s.heap.top?.due else { return }
        if let armed = s.armedFor, armed <= earliest { return }
        s.armedFor = earliest
        timer.schedule(deadline: Uptime.deadline(earliest), leeway: .milliseconds(1))
    }

    private static func before(_ a: Waiting, _ b: Waiting) -> Bool { (a.due, a.order) < (b.due, b.order) }
}
