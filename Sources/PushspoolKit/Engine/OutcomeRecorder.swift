import Dispatch
import Foundation
import PushspoolCore
import Synchronization

/// Records one job's final outcomes on a queue of its own, never on the HTTP client's completion
/// queue: a slow disk or a busy registry stalls this job's bookkeeping, not every service's
/// answers.
///
/// Targets that finish together are written together: each drain encodes every outcome waiting,
/// appends them to the result log with one `write(2)`, and only then runs each target's `then`
/// (counts, metrics, the worker-pool slot's release). A line is never held back while its slot
/// goes to a new request, so after a crash only requests that were in flight are sent again.
/// Devices the services report gone are handed to a `RegistryPruner`, which deletes them in
/// batches on its own queue: a registry busy for seconds delays the prunes, not the sends.
final class OutcomeRecorder: Sendable {
    struct Entry: Sendable {
        var platform: Platform
        var provider: String
        var recipient: Recipient
        var outcome: TargetOutcome
        var at = Date()
        /// Runs once the line is written (or the write failed: the log then stops the job).
        var then: @Sendable () -> Void
    }

    private let log: ResultLog
    private let pruner: RegistryPruner
    private let queue: DispatchQueue
    private let pending = Mutex<(entries: [Entry], draining: Bool)>(([], false))

    init(log: ResultLog, pruner: RegistryPruner, label: String) {
        self.log = log
        self.pruner = pruner
        queue = DispatchQueue(label: "pushspool.outcomes.\(label)")
    }

    func record(_ entry: Entry) {
        let start = pending.withLock { p -> Bool in
            p.entries.append(entry)
            if p.draining { return false }
            p.draining = true
            return true
        }
        if start { queue.async { self.drain() } }
    }

    private func drain() {
        var bytes: [UInt8] = []
        while true {
            let batch = pending.withLock { p -> [Entry] in
                var taken: [Entry] = []
                swap(&taken, &p.entries)
                if taken.isEmpty { p.draining = false }
                return taken
            }
            if batch.isEmpty { return }
            bytes.removeAll(keepingCapacity: true)
            for e in batch {
                bytes += ResultLine.delivery(platform: e.platform, provider: e.provider, recipient: e.recipient,
                                             outcome: e.outcome, at: e.at)
                if e.outcome.status == .unregistered, case .device(let device) = e.recipient,
                   case .deviceGone(let since) = e.outcome.result.disposition {
                    pruner.remove(GoneDevice(id: device.id, handle: device.handle, since: since.map { Date(timeIntervalSince1970: $0) }))
                }
            }
            log.append(line: bytes)
            for e in batch { e.then() }
        }
    }
}

/// Deletes devices the services reported gone, in batches (one registry transaction each), on a
/// queue of its own. `finish` waits for what is queued.
final class RegistryPruner: Sendable {
    private let registry: any DeviceRegistry
    private let log: Log
    private let jobID: String
    private let queue: DispatchQueue
    private let group = DispatchGroup()
    private let pending = Mutex<(gone: [GoneDevice], draining: Bool)>(([], false))

    init(registry: any DeviceRegistry, log: Log, jobID: String) {
        self.registry = registry
        self.log = log
        self.jobID = jobID
        queue = DispatchQueue(label: "pushspool.prune.\(jobID)")
    }

    func remove(_ device: GoneDevice) {
        let start = pending.withLock { p -> Bool in
            p.gone.append(device)
            if p.draining { return false }
            p.draining = true
            return true
        }
        guard start else { return }
        group.enter()
        queue.async { [self] in
            defer { group.leave() }
            while true {
                let batch = pending.withLock { p -> [GoneDevice] in
                    var taken: [GoneDevice] = []
                    swap(&taken, &p.gone)
                    if taken.isEmpty { p.draining = false }
                    return taken
                }
                if batch.isEmpty { return }
                do {
                    try registry.removeGone(batch)
                } catch {
                    log.error("job \(jobID): could not remove \(batch.count) gone device(s) from the registry (\(batch[0].id)…): \(error)")
                }
            }
        }
    }

    /// Waits until every queued device has been removed (or failed to be).
    func finish() { group.wait() }
}
