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
/// Devices the outcome says to remove (`TargetOutcome.pruning`) go to a `RegistryPruner`, which deletes them in
/// batches on its own queue: a registry busy for seconds delays the prunes, not the sends.
/// The recorder also keeps the log where it belongs: at most every `restoreEvery` seconds, after
/// a write, it puts a deleted log (an `rm -rf results/`) back from the open file.
final class OutcomeRecorder: Sendable {
    struct Entry: Sendable {
        var platform: Platform
        var provider: String
        /// A hub send's app (a device carries its own).
        var app: String? = nil
        var recipient: Recipient
        var outcome: TargetOutcome
        /// When it ended, for people: the engine's wall clock (the recorder's `clock`).
        var at: Date
        /// Runs once the line is written (or the write failed: the log then stops the job).
        var then: @Sendable () -> Void
    }

    private let batches: BatchQueue<Entry>
    private final class Written: Sendable {
        let position: Mutex<LogPosition>
        init(_ start: LogPosition) { position = Mutex(start) }
    }
    private let written: Written
    /// The engine's clock (`Engine.Hooks.clock`), whose `wall` stamps the lines.
    let clock: EngineClock

    /// `start`: the log's end now, and the deliveries it holds. `events`: where a restored log
    /// is reported.
    init(log: any OutcomeLog, events: Log, pruner: RegistryPruner, label: String, start: LogPosition, restoreEvery: Double = 1,
         clock: EngineClock = .system) {
        self.clock = clock
        let written = Written(start)
        self.written = written
        // When the log was last looked for (uptime ns): a stat per second, not per write.
        let lookedFor = Mutex<UInt64>(DispatchTime.now().uptimeNanoseconds)
        let interval = UInt64(restoreEvery * 1e9)
        batches = BatchQueue(label: "pushspool.outcomes.\(label)") { batch in
            var bytes: [UInt8] = []
            bytes.reserveCapacity(batch.count * 256)
            var counted = LogPosition(offset: 0)
            for e in batch {
                ResultRecord.appendDelivery(platform: e.platform, provider: e.provider, app: e.app, recipient: e.recipient,
                                            outcome: e.outcome, at: e.at, to: &bytes)
                if let gone = e.outcome.pruning(e.recipient) { pruner.remove(gone, platform: e.platform, recipient: e.recipient, result: e.outcome.result) }
                if let change = e.outcome.handleChange(e.recipient) { pruner.replace(change) }
                counted.count(e.outcome)
            }
            counted.offset = Int64(bytes.count)
            log.append(outcomes: bytes, counted: counted)
            let now = DispatchTime.now().uptimeNanoseconds
            let due = lookedFor.withLock { t -> Bool in
                guard now &- t >= interval else { return false }
                t = now
                return true
            }
            if due, let restored = log.restoreIfDeleted() {
                events.warning(restored, [(.job, label)])
            }
            if log.failure == nil { written.position.withLock { $0.advance(by: counted) } }
            for e in batch { e.then() }
        }
    }

    /// Queues an outcome: written by the pass under way, or by one it starts on the recorder's
    /// queue (or, inside `together`, by the caller when its body is done).
    func record(_ entry: Entry) { batches.add(entry) }

    /// Runs `body`, which records a group of outcomes (a producer's `Handout`), and writes what
    /// it recorded with one pass on the calling thread, unless a pass running elsewhere takes it:
    /// the group shares one `write(2)`, with no hand-off to another thread.
    func together(_ body: () -> Void) { batches.together(body) }

    /// The log's end as this recorder wrote it, and the deliveries it then holds.
    var position: LogPosition { written.position.withLock { $0 } }
}

/// Items handled in batches on a serial queue of its own: `add` never waits for the work, and
/// each pass hands `handle` everything that arrived since the last one. One pass runs at a time,
/// wherever it runs: on the queue, or on the caller of `together` once its body is done.
final class BatchQueue<Item: Sendable>: Sendable {
    private let queue: DispatchQueue
    private let group = DispatchGroup()
    /// What waits for a pass, whether one runs, and how many `together` bodies are running
    /// (while any is, an `add` leaves its item for the pass that body's end makes).
    private struct Pending {
        var items: [Item] = []
        var draining = false
        var gathering = 0
    }
    private let pending = Mutex(Pending())
    private let handle: @Sendable ([Item]) -> Void

    init(label: String, handle: @escaping @Sendable ([Item]) -> Void) {
        queue = DispatchQueue(label: label)
        self.handle = handle
    }

    /// Adds `item` and, if no pass is running or gathered for, starts one on the queue.
    func add(_ item: Item) {
        let start = pending.withLock { p -> Bool in
            p.items.append(item)
            if p.draining || p.gathering > 0 { return false }
            p.draining = true
            return true
        }
        guard start else { return }
        group.enter()
        queue.async { [self] in drain() }
    }

    /// Runs `body`, then a pass on the calling thread for what is waiting (what `body` added,
    /// and what others added meanwhile), unless one is running elsewhere (which then takes it).
    func together(_ body: () -> Void) {
        pending.withLock { $0.gathering += 1 }
        body()
        let start = pending.withLock { p -> Bool in
            p.gathering -= 1
            if p.draining || p.gathering > 0 || p.items.isEmpty { return false }
            p.draining = true
            return true
        }
        guard start else { return }
        group.enter()
        drain()
    }

    private func drain() {
        defer { group.leave() }
        // The batch handled goes back emptied, its capacity kept: a new array per pass grew
        // from one item again, moving every entry each time it doubled.
        var batch: [Item] = []
        while true {
            pending.withLock { p in
                swap(&batch, &p.items)
                if batch.isEmpty { p.draining = false }
            }
            if batch.isEmpty { return }
            handle(batch)
            batch.removeAll(keepingCapacity: true)
        }
    }

    /// Waits until everything added so far has been handled.
    func wait() { group.wait() }
}

extension LogPosition {
    /// One more line, with this outcome.
    mutating func count(_ outcome: TargetOutcome) { count(outcome.status, attempts: outcome.attempts) }

    mutating func count(_ status: DeliveryStatus, attempts: Int) {
        switch status {
        case .delivered: delivered += 1
        case .failed: failed += 1
        case .unregistered: unregistered += 1
        case .capped: capped += 1
        }
        retries += max(0, attempts - 1)
    }

    /// Past `batch` too (its bytes and its outcomes).
    mutating func advance(by batch: LogPosition) {
        offset += batch.offset
        delivered += batch.delivered
        failed += batch.failed
        unregistered += batch.unregistered
        capped += batch.capped
        retries += batch.retries
    }
}
