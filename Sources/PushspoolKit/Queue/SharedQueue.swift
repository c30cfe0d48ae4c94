import Foundation
import PushspoolCore
import Synchronization

/// This host's side of the job queue every host on one PostgreSQL registry shares (README
/// "Several hosts"): the queue's store, the `queue` settings, the wake-ups its notifications
/// give, and the cancel and pause requests any host made (read again on each `control`
/// notification, and whenever the listener reconnects).
final class SharedQueue: Sendable {
    let store: PostgresJobQueue
    /// The registry the queue's audiences are cut from; the store borrows its pool.
    let registry: any SharedRegistry
    let config: QueueConfig
    let wakeups = Wakeups()
    private let requests = Mutex<[String: ControlRequest]>([:])

    init(registry: any SharedRegistry, config: QueueConfig, spool: Spool) {
        self.registry = registry
        self.config = config
        store = PostgresJobQueue(pool: registry.pool, host: Self.hostName(), origin: Self.origin(spool), durableOutcomes: config.durableOutcomes)
    }

    /// How this process is named in leases and `status`: the host's name (`HostName`) and the
    /// process id.
    static func hostName() -> String { "\(HostName.current)/\(getpid())" }

    /// How the jobs this spool accepts name their origin: the host's name and the spool's path,
    /// the same after a restart (the origin finds its jobs again).
    static func origin(_ spool: Spool) -> String { "\(HostName.current):\(spool.root.path)" }

    /// How often an origin following its job looks at the queue between notifications, and a
    /// host retries while the database is away: at most a third of a lease, at most 5 s.
    var fallbackSeconds: Double { min(5, Double(config.leaseSeconds) / 3) }

    /// Whether a send job goes through the queue: one whose audience the registry resolves and
    /// holds more devices than one chunk (a smaller one is sent where it was accepted: sharing
    /// it would add round trips and nothing to share). `local_time` waves and
    /// `spread_over_seconds` pacing are one host's schedule, so those jobs stay too.
    func shares(_ send: SendJob, plan: SendPlan, targets: Int?) -> Bool {
        guard !plan.direct.isEmpty, send.localDelivery == nil, send.spreadOverSeconds == nil else { return false }
        return (targets ?? 0) > config.chunkSize
    }

    /// The queued jobs this process accepted and follows now (`QueuedSend`), by id.
    private let following = Mutex<[String: OriginLog]>([:])

    func follow(_ id: String, _ log: OriginLog) { following.withLock { $0[id] = log } }

    func unfollow(_ id: String, _ log: OriginLog) {
        log.close()
        following.withLock { if $0[id] === log { $0[id] = nil } }
    }

    /// Where a chunk sent here writes its recorded batches too: its job's log, when this
    /// process is the job's origin and follows it now.
    func originLog(for id: String) -> OriginLog? { following.withLock { $0[id] } }

    /// Whether any job has such a request: a chunk asks before every target, and while none
    /// is pending that is an atomic load, not a lock and a lookup.
    private let anyRequest = Atomic<Bool>(false)

    /// A cancel or pause request made on any host for a queued job.
    func request(for id: String) -> ControlRequest? {
        guard anyRequest.load(ordering: .acquiring) else { return nil }
        return requests.withLock { $0[id] }
    }

    func refreshRequests() {
        guard let fresh = try? store.controls() else { return }
        let changed = requests.withLock { r -> Bool in
            defer { r = fresh }
            anyRequest.store(!fresh.isEmpty, ordering: .releasing)
            return r != fresh
        }
        // A chunk of a job cancelled or paused on any host stops waiting at once.
        if changed { StopBell.shared.ring() }
    }
}
