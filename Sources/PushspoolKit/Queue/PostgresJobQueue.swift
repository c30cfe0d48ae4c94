import Foundation
import PushspoolCore

/// The job queue every host shares (schema 8, README "Several hosts"): a send job accepted by
/// any host is published here with its result log's job line; its audience is cut into
/// **chunks**, keyset ranges `(after_key, last_key]` of `devices.seq`, as it is read; every
/// host claims chunks with `FOR UPDATE SKIP LOCKED` under a lease on the database's clock
/// (never a host's: clock skew does not matter), writes their outcomes as result-log lines, a
/// batch per row, while it still holds the lease, and completes each chunk in one transaction
/// that also tells the other hosts (`NOTIFY pushspool_queue`).
public final class PostgresJobQueue: Sendable {
    let pool: PostgresPool
    public let location: String
    /// This process, as leases and `status` name it.
    public let host: String
    /// What the jobs it publishes name as their origin (its host and spool: the same after a
    /// restart).
    public let origin: String

    /// Whether outcome batches (`record`) commit without waiting for the database's flush.
    let asyncOutcomes: Bool
    /// Whether this queue made its pool (and so closes it) or was given the process's one.
    private let ownsPool: Bool

    /// On the process's one pool (the registry's: `SharedRegistry.pool`); `close` leaves it open.
    init(pool: PostgresPool, host: String, origin: String? = nil, durableOutcomes: Bool = true) {
        location = RegistryLocation.redacted(pool.uri)
        self.host = host
        self.origin = origin ?? host
        self.pool = pool
        asyncOutcomes = !durableOutcomes
        ownsPool = false
    }

    /// On a pool of its own of `maxConnections` (a command that opens no registry, a test's host).
    public init(uri: String, host: String, origin: String? = nil, maxConnections: Int = 4, durableOutcomes: Bool = true) {
        location = RegistryLocation.redacted(uri)
        self.host = host
        self.origin = origin ?? host
        pool = PostgresPool(uri: uri, maxConnections: maxConnections)
        asyncOutcomes = !durableOutcomes
        ownsPool = true
    }

    deinit { close() }

    /// Closes its pool if it made it; the process's shared one is the registry's to close.
    public func close() {
        if ownsPool { pool.close() }
    }

    static let channel = "pushspool_queue"

    func run<T>(_ body: (PostgresConnection) throws -> T) throws(RegistryError) -> T {
        do { return try pool.withConnection(waitingAtMost: 10, body) } catch { throw RegistryError.from(error) }
    }

    func transaction<T>(_ body: (PostgresConnection) throws -> T) throws(RegistryError) -> T {
        try run { c in try c.transaction { try body(c) } }
    }

    /// A published job as its origin and its chunks' hosts see it.
    public struct JobRow: Sendable {
        public var id: String
        public var origin: String
        public var body: String
        public var jobLine: String
        public var targets: Int?
        public var control: ControlRequest?
        public var cutDone: Bool
        public var summaryLine: String?
    }

    public func job(_ id: String) throws(RegistryError) -> JobRow? {
        try run { c in
            let r = try c.query("SELECT id, origin, body, job_line, targets, control, cut_done, summary_line FROM queue_jobs WHERE id = $1", [id])
            guard r.count == 1 else { return nil }
            return JobRow(id: r.text(0, 0) ?? id, origin: r.text(0, 1) ?? "", body: r.text(0, 2) ?? "", jobLine: r.text(0, 3) ?? "",
                          targets: r.isNull(0, 4) ? nil : Int(r.int64(0, 4)), control: r.text(0, 5).flatMap(ControlRequest.init(rawValue:)),
                          cutDone: r.text(0, 6) == "t", summaryLine: r.text(0, 7))
        }
    }

    static func key(_ job: String, _ chunk: Int) -> String { "\(job)\u{1F}\(chunk)" }
}
