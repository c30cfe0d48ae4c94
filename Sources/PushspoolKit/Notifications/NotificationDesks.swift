import Foundation
import PushspoolCore

/// Opens the `NotificationDesk` of a registry as the CLI or `serve` opened it: the funnel's
/// delivery counts come from the job's result log here, else from the shared queue (a job of
/// another host), until the job has ended (then from the registry, on every host). The log is
/// read through `digests` (`serve` shares them with its dashboard): each call reads only what
/// was appended since the last, so a running campaign's funnel asked every second does not read
/// its million lines every second.
public enum NotificationDesks {
    public static func desk(registry: any RegistryDatabase, spool: Spool, queue: PostgresJobQueue? = nil,
                            metrics: Metrics? = nil, digests: ResultLogDigests? = nil) -> RegistryNotificationDesk {
        let digests = digests ?? ResultLogDigests(spool: spool, capacity: 4)
        return RegistryNotificationDesk(registry: registry, metrics: metrics) { id in
            let local = digests.digest(id: id)
            if local.found { return RegistryNotificationDesk.Logged(tally: local.deliveries, ended: local.summary != nil) }
            return (queue.flatMap { try? ResultLogContents.queued(id, in: $0) } ?? nil).map(RegistryNotificationDesk.Logged.init)
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
