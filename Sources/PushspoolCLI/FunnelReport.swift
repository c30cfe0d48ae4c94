import Foundation
import PushspoolKit

/// A job's funnel for `status ID` and `results ID --funnel`: the notification desk of the
/// configured registry, its delivery counts from this spool's result log, else the shared queue's.
enum FunnelReport {
    /// nil: the registry knows no tracked job of that id and no result log was found.
    static func funnel(_ id: String, runtime: Runtime, command: String) throws(CLIError) -> Funnel? {
        let registry = try runtime.openRegistry()
        defer { registry.close() }
        let queue = EngineSetup.sharedQueue(config: runtime.config)
        defer { queue?.close() }
        let desk = NotificationDesks.desk(registry: registry, spool: runtime.spool, queue: queue)
        do { return try desk.funnel(job: id) } catch {
            throw CLIError(.ioError, "\(command): registry: \(RegistryError.detail(error))")
        }
    }
}
