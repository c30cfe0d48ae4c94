import Dispatch
import Foundation
import Synchronization

/// One Dispatch timer armed for the earliest time anyone asked to be woken at (a lease that
/// runs out, a skipped job's hour, a retry while the database is away), then disarmed until
/// asked again: an idle host sleeps with no timer at all. Asking for a later time than the one
/// armed changes nothing; the woken side asks again for what is due next. Its times are on the
/// monotonic clock (`Uptime`, the timer's own): moving the wall clock neither fires nor delays it.
final class QueueAlarm: @unchecked Sendable {   // `timer` is touched only under `armedFor`'s lock
    private let timer: any DispatchSourceTimer
    /// `Uptime` seconds it is armed for; nil: disarmed.
    private let armedFor = Mutex<Double?>(nil)
    private let cancelled = Atomic<Bool>(false)

    /// It fires on `queue`, calling what `onFire` gave.
    init(queue: DispatchQueue) {
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .distantFuture)
        timer.resume()
    }

    /// What runs at the time armed (set once, before it is first armed).
    func onFire(_ fire: @escaping @Sendable () -> Void) {
        timer.setEventHandler { [weak self] in
            self?.armedFor.withLock { $0 = nil }
            fire()
        }
    }

    deinit { cancel() }

    /// Wakes in `seconds` at the latest (sooner if already armed sooner).
    func wake(in seconds: Double) {
        guard !cancelled.load(ordering: .acquiring) else { return }
        let at = Uptime.seconds + max(0, seconds)
        armedFor.withLock { armed in
            if let armed, armed <= at { return }
            armed = at
            timer.schedule(deadline: .now() + max(0, seconds), leeway: .milliseconds(50))
        }
    }

    /// Whether it is armed.
    var isArmed: Bool { armedFor.withLock { $0 != nil } }

    /// Disarms it for good.
    func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        armedFor.withLock { _ in timer.cancel() }
    }
}
