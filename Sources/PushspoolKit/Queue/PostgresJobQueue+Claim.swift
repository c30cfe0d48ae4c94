import Foundation
import PushspoolCore

// A chunk's life, 3: a host claims an open chunk, or takes over a lapsed one (`TakeOver`).
extension PostgresJobQueue {
    public struct Chunk: Sendable, Hashable {
        public var job: String
        public var number: Int
        /// Devices with `seq` in `(after, last]`; a `requests` chunk is the job's hub, topic or
        /// channel requests instead.
        public var after: Int64
        public var last: Int64
        public var requests: Bool
        /// How many times it was claimed (more than once: taken over, or resumed). With the
        /// host, it names this claim: the chunk's holder (`holder`).
        public var taken: Int
        /// The holder whose lapsed lease this claim took over (`ChunkLease.Effect.tookOver`);
        /// nil: the chunk was open (new, or let go).
        public var tookOverFrom: String?

        public init(job: String, number: Int, after: Int64, last: Int64, requests: Bool, taken: Int, tookOverFrom: String? = nil) {
            self.job = job
            self.number = number
            self.after = after
            self.last = last
            self.requests = requests
            self.taken = taken
            self.tookOverFrom = tookOverFrom
        }
    }

    /// A chunk's holder as `ChunkLease` names it: a host's claim of it (the claim's number).
    static func holder(host: String, taken: Int) -> String { "\(host)#\(taken)" }

    /// The chunks a claim may take: open, or their holder's lease run out, of jobs neither paused
    /// nor cancelled, not of the jobs skipped (parameter `skipped`, a text array), and only of this
    /// origin's jobs when parameter `origin` is not NULL. One text for `claim` and
    /// `claimableButLocked`, which must mean the same chunks.
    private static func claimable(skipped: String, origin: String) -> String {
        """
        NOT q.done AND (q.lease_until IS NULL OR q.lease_until < clock_timestamp()) AND j.control IS NULL
          AND NOT (q.job = ANY(\(skipped)::text[])) AND (\(origin)::text IS NULL OR j.origin = \(origin))
        """
    }

    private static let lockedSQL = """
        SELECT EXISTS (SELECT 1 FROM queue_chunks q JOIN queue_jobs j ON j.id = q.job WHERE \(claimable(skipped: "$1", origin: "$2")))
        """

    private static let claimSQL = """
        WITH picked AS (
            SELECT q.job, q.chunk, q.host AS previous, q.taken AS previous_taken FROM queue_chunks q JOIN queue_jobs j ON j.id = q.job
            WHERE \(claimable(skipped: "$4", origin: "$5"))
            ORDER BY j.created_at, q.chunk
            FOR UPDATE OF q SKIP LOCKED LIMIT $2::int)
        UPDATE queue_chunks q SET host = $1, lease_until = clock_timestamp() + make_interval(secs => $3::float8), taken = q.taken + 1
        FROM picked WHERE q.job = picked.job AND q.chunk = picked.chunk
        RETURNING q.job, q.chunk, q.after_key, q.last_key, q.requests, q.taken, picked.previous, picked.previous_taken
        """

    /// Whether a chunk a claim could take is still there after a claim that had room for it:
    /// then its row is locked. Mostly a claim on another host, over in a moment; but a host cut
    /// off from the database in the middle of a transaction on the row leaves it locked until
    /// the server ends that session (`idle_in_transaction_session_timeout`), and nothing
    /// announces that.
    public func claimableButLocked(excluding skipped: [String] = [], ownOnly: Bool = false) throws(RegistryError) -> Bool {
        try run { c in
            try c.query(Self.lockedSQL, [PostgresRegistry.arrayLiteral(skipped), ownOnly ? origin : nil]).text(0, 0) == "t"
        }
    }

    /// Claims up to `count` chunks no host holds, or takes over chunks whose holder's lease ran
    /// out (`TakeOver`; `ChunkLease`: open or lapsed, never a live lease), oldest job first, of jobs neither
    /// paused nor cancelled; `ownOnly`: only of jobs this origin published. Each row is locked
    /// `FOR UPDATE` while it is claimed: a lapsed holder's batch (`record`) either went in
    /// before the take-over, where its new holder reads it, or finds the new holder and is refused.
    public func claim(count: Int, lease: Double, excluding skipped: [String] = [], ownOnly: Bool = false) throws(RegistryError) -> [Chunk] {
        guard count > 0 else { return [] }
        return try run { c in
            let r = try c.query(Self.claimSQL, [host, "\(count)", "\(lease)", PostgresRegistry.arrayLiteral(skipped), ownOnly ? origin : nil])
            return (0..<r.count).map { i in
                let taken = Int(r.int64(i, 5))
                let tookOverFrom = TakeOver.previousHolder(host: r.text(i, 6), taken: Int(r.int64(i, 7)),
                                                           claimedBy: Self.holder(host: host, taken: taken))
                return Chunk(job: r.text(i, 0) ?? "", number: Int(r.int64(i, 1)), after: r.int64(i, 2), last: r.int64(i, 3),
                             requests: r.text(i, 4) == "t", taken: taken, tookOverFrom: tookOverFrom)
            }
        }
    }
}
