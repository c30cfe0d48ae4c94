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

    private let batches: BatchQueue<Entry>
    /// The job's own (producer) thread: the one that makes the recorder.
    private let jobThread = ThreadID.current

    init(log: ResultLog, pruner: RegistryPruner, label: String) {
        batches = BatchQueue(label: "pushspool.outcomes.\(label)") { batch in
            var bytes: [UInt8] = []
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

    /// An outcome that comes back on the job's own thread, as from a provider that answers at
    /// once, is written right there, with no hand-off to another thread (that hand-off, a wake-up
    /// per target, doubled the CPU of a sandbox broadcast). Answers from a transport's completion
    /// queue always go through the recorder's queue.
    func record(_ entry: Entry) { batches.add(entry, drainHere: ThreadID.current == jobThread) }
}

/// Deletes devices the services reported gone, in batches (one registry transaction each), on a
/// queue of its own. `finish` waits for what is queued.
final class RegistryPruner: Sendable {
    private let batches: BatchQueue<GoneDevice>

    init(registry: any DeviceRegistry, log: Log, jobID: String) {
        batches = BatchQueue(label: "pushspool.prune.\(jobID)") { batch in
            do {
                try registry.removeGone(batch)
            } catch {
                log.error("job \(jobID): could not remove \(batch.count) gone device(s) from the registry (\(batch[0].id)…): \(RegistryError.detail(error))")
            }
        }
    }

    func remove(_ device: GoneDevice) { batches.add(device) }

    /// Waits until every queued device has been removed (or failed to be).
    func finish() { batches.wait() }
}

/// Items handled in batches on a serial queue of its own: `add` never waits for the work (unless
/// asked to drain on its own thread), and each pass hands `handle` everything that arrived since
/// the last one. One pass runs at a time, wherever it runs.
final class BatchQueue<Item: Sendable>: Sendable {
    private let queue: DispatchQueue
    private let group = DispatchGroup()
    private let pending = Mutex<(items: [Item], draining: Bool)>(([], false))
    private let handle: @Sendable ([Item]) -> Void

    init(label: String, handle: @escaping @Sendable ([Item]) -> Void) {
        queue = DispatchQueue(label: label)
        self.handle = handle
    }

    /// `drainHere`: if no pass is running, run it on the calling thread instead of the queue.
    func add(_ item: Item, drainHere: Bool = false) {
        let start = pending.withLock { p -> Bool in
            p.items.append(item)
            if p.draining { return false }
            p.draining = true
            return true
        }
        guard start else { return }
        group.enter()
        if drainHere { drain() } else { queue.async { [self] in drain() } }
    }

    private func drain() {
        defer { group.leave() }
        while true {
            let batch = pending.withLock { p -> [Item] in
                var taken: [Item] = []
                swap(&taken, &p.items)
                if taken.isEmpty { p.draining = false }
                return taken
            }
            if batch.isEmpty { return }
            handle(batch)
        }
    }

    /// Waits until everything added so far has been handled.
    func wait() { group.wait() }
}
