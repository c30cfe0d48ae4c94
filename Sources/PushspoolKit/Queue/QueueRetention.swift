import Dispatch
import Foundation
import Synchronization

/// The end of a chunk's life: the queue's rows of jobs that ended more than `queue.keep_days`
/// ago are deleted (`PostgresJobQueue.purge`), at start and then when the oldest ended job is
/// that old (at most hourly), as a work item of its own (about a second per million lines). Only a
/// stop (SIGTERM) cuts it short: `run --once` waits for it after its own jobs, so hosts run from
/// cron delete old jobs whole too. Idle, it waits on its alarm: no statement.
final class QueueRetention: Sendable {
    private let queue: SharedQueue
    private let log: Log
    private let engineStopping: @Sendable () -> Bool
    private let background: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let control: DispatchQueue
    private let alarm: QueueAlarm
    /// When it may next delete (at most hourly), in `Uptime` seconds.
    private let next = Mutex(-Double.infinity)
    private let stopped = Atomic<Bool>(false)

    /// `control`: the serial queue it arms and fires on; `background` runs a purge as a work
    /// item the caller waits for at its stop.
    init(queue: SharedQueue, log: Log, control: DispatchQueue, isStopping: @escaping @Sendable () -> Bool,
         background: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.queue = queue
        self.log = log
        self.control = control
        engineStopping = isStopping
        self.background = background
        alarm = QueueAlarm(queue: control)
        alarm.onFire { [weak self] in self?.purgeIfDue() }
    }

    /// No purge starts any more; one running goes on (`run --once` waits for it), unless the
    /// engine stops.
    func stop() {
        stopped.store(true, ordering: .releasing)
        alarm.cancel()
    }

    private func isStopping() -> Bool { stopped.load(ordering: .acquiring) || engineStopping() }

    private var days: Int { queue.config.keepDays }

    /// Deletes now, unless it did less than an hour ago.
    func purgeIfDue() {
        let now = Uptime.seconds
        let days = days
        guard days > 0, !isStopping(), next.withLock({ next -> Bool in
            guard next <= now else { return false }
            next = now + 3600
            return true
        }) else { return }
        background { [self] in
            do {
                let jobs = try queue.store.purge(endedBefore: Double(days) * 86_400, stop: engineStopping)
                if jobs > 0 {
                    log.info("deleted from the shared queue \(jobs) job\(jobs == 1 ? "" : "s") that ended more than \(days) day\(days == 1 ? "" : "s") ago (queue.keep_days)")
                }
                control.async { [self] in arm(afterEnd: false) }
            } catch {
                log.warning("could not delete old jobs from the shared queue: \(RegistryError.detail(error)); again in an hour")
                alarm.wake(in: 3600)
            }
        }
    }

    /// A job ended (its `ended` notification): armed for when it is old enough, unless armed sooner.
    func jobEnded() { control.async { [self] in arm(afterEnd: true) } }

    /// Arms the alarm for when the oldest ended job is old enough (after a purge: read from the
    /// queue), or, told a job just ended, for when that one is.
    private func arm(afterEnd: Bool) {
        let age = Double(days) * 86_400
        guard age > 0, !isStopping() else { return }
        let soonest = next.withLock { $0 } - Uptime.seconds
        if afterEnd {
            if !alarm.isArmed { alarm.wake(in: max(age, soonest)) }
        } else if let due = try? queue.store.nextPurge(endedBefore: age) {
            alarm.wake(in: max(due, soonest))
        }
    }
}
