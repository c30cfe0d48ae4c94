import Foundation
import PushspoolCore
import Synchronization

/// The send jobs running in this dispatcher and how far each has got: what the live progress
/// lines, the metrics file and the progress checkpoints (`status`) show.
public final class Activity: Sendable {
    public struct Progress: Sendable, Equatable {
        public var id: String
        public var targets: Int?
        /// Targets with a final outcome, this run and earlier runs of the job.
        public var finished: Int
        public var failed: Int
        /// Finished in this run (the rate is over this run only).
        public var finishedThisRun: Int
        public var started: Date
        public var spreadOverSeconds: Int?
        public var state = JobState.running

        /// Targets per second over the last few seconds (nil until there is a second of data).
        public var rate: Double?

        public var eta: Double? { RateEstimator.secondsLeft(targets: targets, finished: finished, rate: rate) }
    }

    private struct Entry {
        var progress: Progress
        var read: @Sendable () -> (finished: Int, failed: Int)
        /// The rate over the last 10 s, from the job's start until then.
        var rate = RateEstimator(window: 10, minimumSpan: 1)
    }
    private let entries = Mutex<[String: Entry]>([:])
    /// Rates are sampled on its `wall` time, as the jobs' `started` is read.
    private let clock: EngineClock

    public init(clock: EngineClock = .system) {
        self.clock = clock
    }

    func begin(_ progress: Progress, read: @escaping @Sendable () -> (finished: Int, failed: Int)) {
        var entry = Entry(progress: progress, read: read)
        entry.rate.sample(at: progress.started.timeIntervalSince1970, count: progress.finished)
        entries.withLock { $0[progress.id] = entry }
    }

    func end(_ id: String) {
        entries.withLock { _ = $0.removeValue(forKey: id) }
    }

    /// Each running job's progress now, by id. The rate is over the last 10 s (or since start,
    /// which `begin` sampled).
    public func snapshot(now: Date? = nil) -> [Progress] {
        let now = now ?? clock.wall()
        return entries.withLock { entries -> [Progress] in
            var out: [Progress] = []
            for (id, var e) in entries {
                let (finished, failed) = e.read()
                e.progress.finishedThisRun += finished - e.progress.finished
                e.progress.finished = finished
                e.progress.failed = failed
                e.rate.sample(at: now.timeIntervalSince1970, count: finished)
                if let rate = e.rate.rate { e.progress.rate = rate }
                entries[id] = e
                out.append(e.progress)
            }
            return out.sorted { $0.started < $1.started }
        }
    }

    /// Targets of running jobs without a final outcome yet (read without taking a rate sample).
    public var targetsRemaining: Int {
        entries.withLock { entries in
            entries.values.reduce(0) { sum, e in
                let finished = e.read().finished
                return sum + max(0, (e.progress.targets ?? finished) - finished)
            }
        }
    }
}
