import Foundation
import PushspoolCore

/// Opens the `NotificationDesk` of a registry as the CLI or `serve` opened it: the funnel's
/// delivery counts come from the job's result log here, else from the shared queue (a job of
/// another host), until the job has ended (then from the registry, on every host).
public enum NotificationDesks {
    public static func desk(registry: any RegistryDatabase, spool: Spool, queue: PostgresJobQueue? = nil,
                            metrics: Metrics? = nil) -> RegistryNotificationDesk {
        RegistryNotificationDesk(registry: registry, metrics: metrics) { id in
            if let local = ResultLogContents.read(spool.resultURL(jobID: id)) { return local }
            return queue.flatMap { try? ResultLogContents.queued(id, in: $0) } ?? nil
        }
    }
}

extension ResultLogContents {
    /// A job's log as the shared queue holds it, counted as a file would be; nil: no such job.
    static func queued(_ id: String, in queue: PostgresJobQueue) throws -> ResultLogContents? {
        var c = ResultLogContents()
        let known = try queue.results(id) { text in
            for line in text.utf8.split(separator: 0x0A) { c.absorb(Array(line)) }
        }
        c.finished.seal()
        return known ? c : nil
    }
}
