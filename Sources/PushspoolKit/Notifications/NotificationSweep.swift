import Foundation
import PushspoolCore

/// What a dispatcher deletes of tracked jobs as time passes: a secure job's content once its
/// `secure_ttl_seconds` are up, with the job file's copy in `done/` (the only other place that
/// holds the text), and the events of jobs that ended more than `receipts.keep_days` ago. Each
/// sweep says when the next has something to do (`NotificationStore.nextSweep`): the
/// dispatcher sweeps then (looking with its orphan scans, which ask the registry nothing), and
/// after a job of its own starts or ends, at most once a minute; an idle registry is not asked.
struct NotificationSweep: Sendable {
    static let interval: TimeInterval = 60

    let registry: any NotificationStore
    let spool: Spool
    let keepDays: Int
    let log: Log

    /// Sweeps; returns when the next sweep is due (nil: only after another job starts or ends;
    /// a sweep that failed is tried again after `interval`).
    @discardableResult
    func run(now: Date) -> Date? {
        do {
            for (id, file) in try registry.eraseExpiredContent(now: now) {
                if let file { removeCopies(of: file) }
                log.info("secure content erased (secure_ttl_seconds passed)", [(.job, id)])
            }
            try registry.purgeEvents(endedBefore: now.addingTimeInterval(-Double(keepDays) * 86_400))
            return try registry.nextSweep(keepDays: keepDays)
        } catch {
            log.warning("sweeping expired notifications failed: \(RegistryError.detail(error)); tried again later")
            return now.addingTimeInterval(Self.interval)
        }
    }

    /// The ended job's file, wherever a finished job rests.
    private func removeCopies(of file: String) {
        for folder in [Spool.Folder.done, .failed] {
            let url = spool.url(folder, file)
            if FileManager.default.fileExists(atPath: url.path) { try? FileManager.default.removeItem(at: url) }
        }
    }
}
