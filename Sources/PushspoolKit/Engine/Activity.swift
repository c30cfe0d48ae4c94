import Foundation
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

        public var eta: Double? {
            guard let targets, let rate, rate > 0, targets > finished else { return nil }
            return Double(targets - finished) / rate
        }
    }

    private struct Entry {
        var progress: Progress
        var read: @Sendable () -> (finished: Int, failed: Int)
        /// (time, finished) samples, oldest first, for the recent rate.
        var samples: [(Double, Int)] = []
    }
    private let entries = Mutex<[String: Entry]>([:])

    public init() {}

    func begin(_ progress: Progress, read: @escaping @Sendable () -> (finished: Int, failed: Int)) {
        entries.withLock { $0[progress.id] = Entry(progress: progress, read: read) }
    }

    func end(_ id: String) {
        entries.withLock { _ = $0.removeValue(forKey: id) }
    }

    /// Each running job's progress now, by id. The rate is over the last 10 s (or since start).
    public func snapshot(now: Date = Date()) -> [Progress] {
        entries.withLock { entries -> [Progress] in
            var out: [Progress] = []
            for (id, var e) in entries {
                let (finished, failed) = e.read()
                let t = now.timeIntervalSince1970
                let before = e.progress.finished
                e.progress.finishedThisRun += finished - before
                e.progress.finished = finished
                e.progress.failed = failed
                e.samples.append((t, finished))
                while let first = e.samples.first, t - first.0 > 10, e.samples.count > 2 { e.samples.removeFirst() }
                if let first = e.samples.first, t - first.0 >= 1 {
                    e.progress.rate = Double(finished - first.1) / (t - first.0)
                } else if now.timeIntervalSince(e.progress.started) >= 1 {
                    e.progress.rate = Double(e.progress.finishedThisRun) / now.timeIntervalSince(e.progress.started)
                }
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
