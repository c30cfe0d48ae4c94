import Foundation
import PushspoolCore
import Synchronization

/// This host's side of the job queue every host on one PostgreSQL registry shares (README
/// "Several hosts"): the queue's store, the `queue` settings, the wake-ups its notifications
/// give, and the cancel and pause requests any host made (read again on each `control`
/// notification, and at least every `fallbackSeconds`).
final class SharedQueue: Sendable {
    let store: PostgresJobQueue
    let registry: PostgresRegistry
    let uri: String
    let config: QueueConfig
    let wakeups = Wakeups()
    private let requests = Mutex<[String: ControlRequest]>([:])

    init(uri: String, registry: PostgresRegistry, config: QueueConfig, host: String = SharedQueue.hostName()) {
        self.uri = uri
        self.registry = registry
        self.config = config
        store = PostgresJobQueue(uri: uri, host: host)
    }

    /// How this process is named in leases and `status`: the host's name and the process id.
    static func hostName() -> String {
        "\(ProcessInfo.processInfo.hostName)/\(getpid())"
    }

    /// How often a host looks at the queue with no notification (a lease that ran out tells
    /// no one): at most a third of a lease, at most 5 s.
    var fallbackSeconds: Double { min(5, Double(config.leaseSeconds) / 3) }

    /// Whether a send job goes through the queue: one whose audience the registry resolves and
    /// holds more devices than one chunk (a smaller one is sent where it was accepted: sharing
    /// it would add round trips and nothing to share). `local_time` waves and
    /// `spread_over_seconds` pacing are one host's schedule, so those jobs stay too.
    func shares(_ send: SendJob, plan: SendPlan, targets: Int?) -> Bool {
        guard !plan.direct.isEmpty, send.localDelivery == nil, send.spreadOverSeconds == nil else { return false }
        return (targets ?? 0) > config.chunkSize
    }

    /// A cancel or pause request made on any host for a queued job.
    func request(for id: String) -> ControlRequest? { requests.withLock { $0[id] } }

    func refreshRequests() {
        guard let fresh = try? store.controls() else { return }
        requests.withLock { $0 = fresh }
    }
}

/// Wakes every waiter at once (a notification came); a waiter that started before the last
/// wake-up returns at once.
final class Wakeups: @unchecked Sendable {   // the condition guards `generation`
    private let condition = NSCondition()
    private var generation = 0

    var current: Int {
        condition.lock()
        defer { condition.unlock() }
        return generation
    }

    func signal() {
        condition.lock()
        generation += 1
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until a wake-up after `seen` or `timeout` seconds; returns the generation then.
    @discardableResult
    func wait(after seen: Int, timeout: Double) -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while generation == seen, condition.wait(until: deadline) {}
        return generation
    }
}

/// A chunk's outcome lines go to the queue, a batch per row, while this host still holds the
/// chunk; once it does not (taken over, or the database is gone), writing fails and the run
/// stops, as on a full disk.
final class ChunkOutcomeLog: OutcomeLog {
    private let store: PostgresJobQueue
    private let chunk: PostgresJobQueue.Chunk
    private let held: ChunkWorker.Held
    private let state = Mutex<(size: Int64, failure: String?)>((0, nil))
    /// Told how many outcomes each write recorded (this host's rate in `status`), and when the
    /// database cannot be reached: then every chunk of this host stops at once (their outcomes
    /// could not be recorded either), not each one at its own next write.
    private let recorded: @Sendable (Int) -> Void
    private let unreachable: @Sendable (any Error) -> Void

    init(store: PostgresJobQueue, chunk: PostgresJobQueue.Chunk, held: ChunkWorker.Held,
         recorded: @escaping @Sendable (Int) -> Void, unreachable: @escaping @Sendable (any Error) -> Void) {
        self.store = store
        self.chunk = chunk
        self.held = held
        self.recorded = recorded
        self.unreachable = unreachable
    }

    func append(line bytes: [UInt8]) {
        guard failure == nil, !bytes.isEmpty else { return }
        let note: String?
        do {
            if try store.record(chunk, lines: String(decoding: bytes, as: UTF8.self)) {
                note = nil
                recorded(bytes.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 })
            } else {
                note = "the chunk was taken over by another host"
                held.lose()
            }
        } catch {
            // The run stops; the chunk is let go, or its lease runs out while the database is away.
            note = "the queue could not record outcomes: \(RegistryError.detail(error))"
            unreachable(error)
        }
        state.withLock { s in
            if let note { s.failure = s.failure ?? note } else { s.size += Int64(bytes.count) }
        }
    }

    var failure: String? { state.withLock { $0.failure } }
    var size: Int64 { state.withLock { $0.size } }
    func restoreIfDeleted() -> String? { nil }
}
