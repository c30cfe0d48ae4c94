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

    // MARK: Publishing

    /// Publishes a job once (a second publish of the same id, by a resumed origin, changes
    /// nothing): its body and job line, and for a job whose service resolves the audience
    /// (hub, FCM topic, broadcast channel) its single-request chunk 0. `devices`: whether its
    /// audience has devices to cut into chunks.
    public func publish(id: String, body: String, jobLine: String, targets: Int?, requests: Bool, devices: Bool) throws(RegistryError) {
        try transaction { c in
            let inserted = try c.query("""
                INSERT INTO queue_jobs(id, origin, body, job_line, targets, cut_done) VALUES($1, $2, $3, $4, $5::bigint, $6::boolean)
                ON CONFLICT (id) DO NOTHING
                """, [id, origin, body, jobLine, targets.map { "\($0)" }, devices ? "false" : "true"]).affected
            guard inserted == 1 else { return }
            if requests {
                try c.query("INSERT INTO queue_chunks(job, chunk, after_key, last_key, requests) VALUES($1, 0, 0, 0, true)", [id])
            }
            try c.query("SELECT pg_notify($1, 'ready')", [Self.channel])
        }
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

    // MARK: Cutting

    /// A job whose audience is still being cut, taken under a lease by one host at a time.
    public struct Cut: Sendable {
        public var job: String
        public var after: Int64
        public var chunks: Int
    }

    /// Takes the oldest job still to be cut (none paused or cancelled) whose cutter's lease ran
    /// out; `ownOnly`: only a job this origin published.
    public func claimCut(lease: Double, ownOnly: Bool = false) throws(RegistryError) -> Cut? {
        try run { c in
            let r = try c.query("""
                UPDATE queue_jobs SET cutter = $1, cut_lease_until = clock_timestamp() + make_interval(secs => $2::float8)
                WHERE id = (SELECT id FROM queue_jobs
                            WHERE NOT cut_done AND control IS NULL AND (cut_lease_until IS NULL OR cut_lease_until < clock_timestamp())
                              AND ($3::text IS NULL OR origin = $3)
                            ORDER BY created_at FOR UPDATE SKIP LOCKED LIMIT 1)
                RETURNING id, cut_after, chunks
                """, [host, "\(lease)", ownOnly ? origin : nil])
            guard r.count == 1 else { return nil }
            return Cut(job: r.text(0, 0) ?? "", after: r.int64(0, 1), chunks: Int(r.int64(0, 2)))
        }
    }

    /// Adds the next chunk `(cut.after, last]` (nil: the audience is used up) and moves the cut
    /// on, in one transaction, while this host still holds the cut; false: it lost it.
    public func addChunk(_ cut: inout Cut, last: Int64?, lease: Double) throws(RegistryError) -> Bool {
        let current = cut
        let kept: Bool = try transaction { c in
            let moved = try c.query("""
                UPDATE queue_jobs SET cut_after = coalesce($3::bigint, cut_after), chunks = chunks + ($3::bigint IS NOT NULL)::int,
                    cut_done = ($3::bigint IS NULL), cut_lease_until = clock_timestamp() + make_interval(secs => $4::float8)
                WHERE id = $1 AND cutter = $2 AND NOT cut_done AND cut_after = $5::bigint
                """, [current.job, host, last.map { "\($0)" }, "\(lease)", "\(current.after)"]).affected
            guard moved == 1 else { return false }
            if let last {
                try c.query("INSERT INTO queue_chunks(job, chunk, after_key, last_key) VALUES($1, $2::int, $3::bigint, $4::bigint)",
                            [current.job, "\(current.chunks + 1)", "\(current.after)", "\(last)"])
            }
            try c.query("SELECT pg_notify($1, $2)", [Self.channel, last == nil ? "cut " + current.job : "ready"])
            return true
        }
        if kept, let last {
            cut.after = last
            cut.chunks += 1
        }
        return kept
    }

    // MARK: Claiming

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

    /// Claims up to `count` chunks no host holds, or takes over chunks whose holder's lease ran
    /// out (`ChunkLease`: open or lapsed, never a live lease), oldest job first, of jobs neither
    /// paused nor cancelled; `ownOnly`: only of jobs this origin published. Each row is locked
    /// `FOR UPDATE` while it is claimed: a lapsed holder's batch (`record`) either went in
    /// before the take-over, where its new holder reads it, or finds the new holder and is refused.
    public func claim(count: Int, lease: Double, excluding skipped: [String] = [], ownOnly: Bool = false) throws(RegistryError) -> [Chunk] {
        guard count > 0 else { return [] }
        return try run { c in
            let r = try c.query("""
                WITH picked AS (
                    SELECT q.job, q.chunk, q.host AS previous, q.taken AS previous_taken FROM queue_chunks q JOIN queue_jobs j ON j.id = q.job
                    WHERE NOT q.done AND (q.lease_until IS NULL OR q.lease_until < clock_timestamp()) AND j.control IS NULL
                      AND NOT (q.job = ANY($4::text[])) AND ($5::text IS NULL OR j.origin = $5)
                    ORDER BY j.created_at, q.chunk
                    FOR UPDATE OF q SKIP LOCKED LIMIT $2::int)
                UPDATE queue_chunks q SET host = $1, lease_until = clock_timestamp() + make_interval(secs => $3::float8), taken = q.taken + 1
                FROM picked WHERE q.job = picked.job AND q.chunk = picked.chunk
                RETURNING q.job, q.chunk, q.after_key, q.last_key, q.requests, q.taken, picked.previous, picked.previous_taken
                """, [host, "\(count)", "\(lease)", PostgresRegistry.arrayLiteral(skipped), ownOnly ? origin : nil])
            return (0..<r.count).map { i in
                let taken = Int(r.int64(i, 5))
                // What the row was before this claim: open, or a lapsed holder's (a live lease is never picked).
                let before = ChunkLease<String>(done: false, holder: r.text(i, 6).map { Self.holder(host: $0, taken: Int(r.int64(i, 7))) },
                                                leaseRuns: false)
                var tookOverFrom: String?
                if case .tookOver(let previous) = before.on(.claim(as: Self.holder(host: host, taken: taken))).effect { tookOverFrom = previous }
                return Chunk(job: r.text(i, 0) ?? "", number: Int(r.int64(i, 1)), after: r.int64(i, 2), last: r.int64(i, 3),
                             requests: r.text(i, 4) == "t", taken: taken, tookOverFrom: tookOverFrom)
            }
        }
    }

    /// Seconds until the earliest lease another holder has on a chunk (or a cut) of a job
    /// neither paused nor cancelled runs out, when this host may take it over; nil: no lease
    /// runs. `ownOnly`: of jobs this origin published. A host sleeps until then (or the next
    /// notification): a lease that runs out tells no one.
    public func nextLapse(ownOnly: Bool = false) throws(RegistryError) -> Double? {
        try run { c in
            let r = try c.query("""
                SELECT extract(epoch from least(
                    (SELECT min(q.lease_until) FROM queue_chunks q JOIN queue_jobs j ON j.id = q.job
                     WHERE NOT q.done AND q.lease_until > clock_timestamp() AND q.host <> $1 AND j.control IS NULL
                       AND ($2::text IS NULL OR j.origin = $2)),
                    (SELECT min(cut_lease_until) FROM queue_jobs
                     WHERE NOT cut_done AND control IS NULL AND cut_lease_until > clock_timestamp() AND cutter <> $1
                       AND ($2::text IS NULL OR origin = $2))
                ) - clock_timestamp())
                """, [host, ownOnly ? origin : nil])
            return r.isNull(0, 0) ? nil : max(0, r.double(0, 0))
        }
    }

    /// Renews the leases of the chunks this host is sending (`keys`, `key(job, chunk)`), and
    /// says which it still holds: a lease that ran out is not renewed (`ChunkLease`: a lapsed
    /// holder can do nothing more; another host may have taken the chunk over).
    /// `sent`, `rate`: for `status`.
    public func renew(_ keys: [String], lease: Double, sent: Int64, rate: Double) throws(RegistryError) -> Set<String> {
        let holding = keys.count
        return try transaction { c in
            try Self.report(on: c, host: host, chunks: holding, sent: sent, rate: rate)
            let r = try c.query("""
                UPDATE queue_chunks SET lease_until = clock_timestamp() + make_interval(secs => $2::float8)
                WHERE host = $1 AND NOT done AND lease_until > clock_timestamp() AND job || chr(31) || chunk = ANY($3::text[])
                RETURNING job, chunk
                """, [host, "\(lease)", PostgresRegistry.arrayLiteral(keys)])
            return Set((0..<r.count).map { Self.key(r.text($0, 0) ?? "", Int(r.int64($0, 1))) })
        }
    }

    /// Writes this host's report for `status` (chunks held, outcomes recorded, their rate):
    /// at start, and with each renewal while it holds chunks.
    public func report(chunks: Int, sent: Int64, rate: Double) throws(RegistryError) {
        try run { c in try Self.report(on: c, host: host, chunks: chunks, sent: sent, rate: rate) }
    }

    private static func report(on c: PostgresConnection, host: String, chunks: Int, sent: Int64, rate: Double) throws {
        try c.query("""
            INSERT INTO queue_hosts(host, seen_at, chunks, sent, rate) VALUES($1, clock_timestamp(), $2::int, $3::bigint, $4::float8)
            ON CONFLICT (host) DO UPDATE SET seen_at = excluded.seen_at, chunks = excluded.chunks, sent = excluded.sent, rate = excluded.rate
            """, [host, "\(chunks)", "\(sent)", "\(rate)"])
    }

    /// The first key of the advisory lock a running host holds on its listening connection
    /// (the second: its name's `hashtext`): PostgreSQL lets it go when the connection ends, so
    /// `hosts` tells a live host from a dead one without a heartbeat statement.
    static let presenceKey: Int32 = 0x7073_7071   // "pspq"

    /// Takes `host`'s presence lock on `c` for as long as the connection lives (`pg_try_`: two
    /// names of one hash would share it, and then the second is seen by its reports only).
    static func presenceLock(_ host: String, on c: PostgresConnection) throws {
        try c.query("SELECT pg_try_advisory_lock($1::int, hashtext($2))", ["\(presenceKey)", host])
    }

    static func key(_ job: String, _ chunk: Int) -> String { "\(job)\u{1F}\(chunk)" }

    /// Appends one batch of a chunk's outcome lines, if this claim's lease on the chunk still
    /// runs; false: it lapsed or was taken over (the lines are dropped: the chunk's next holder
    /// sends those targets again).
    public func record(_ chunk: Chunk, lines: String) throws(RegistryError) -> Bool {
        try !record([(chunk, Array(lines.utf8))]).isEmpty
    }

    /// Appends a batch of outcome lines for each of several chunks in one statement and one
    /// commit, each only where this claim still holds its chunk under a live lease
    /// (`ChunkLease`'s `record`); returns the row each such batch became (the others' lines are
    /// dropped: their next holders send those targets again). A batch per chunk at most (a
    /// chunk's recorder waits for its batch). The lines go as they are (UTF-8, one per outcome,
    /// each ending in a newline).
    ///
    /// The holder and its lease are checked in the statement that writes, on each chunk's row
    /// locked (`FOR KEY SHARE`, which a claim's `FOR UPDATE` waits for or skips): a claim
    /// taking the chunk over waits for this batch to commit and then reads it back as final, or
    /// has the row first, and then this check sees the new holder (or the lapsed lease) and
    /// the batch is refused. Either way no target is logged and counted twice. The lock does
    /// not hold up this host's own renewals (plain updates of non-key columns), so a batch of
    /// several chunks and a renewal of the same chunks never deadlock.
    public func record(_ batches: [(chunk: Chunk, lines: [UInt8])]) throws(RegistryError) -> [Chunk: Int64] {
        guard !batches.isEmpty else { return [:] }
        let rows = batches.indices.map { i in "($\(4 * i + 2), $\(4 * i + 3)::int, $\(4 * i + 4)::int, $\(4 * i + 5)::text)" }.joined(separator: ", ")
        var parameters: [PostgresValue] = [.text(host)]
        for b in batches { parameters += [.text(b.chunk.job), .text("\(b.chunk.number)"), .text("\(b.chunk.taken)"), .bytes(b.lines)] }
        // Without `durable_outcomes`, this statement's own commit does not wait for the flush:
        // `set_config(…, true)` is `SET LOCAL`, which lasts until the end of the statement's
        // transaction and is read by its commit, so the pool's connection is left as it was.
        // (A CTE that no one reads is not run: `held` reads it.)
        let (setting, join) = asyncOutcomes
            ? ("unflushed AS (SELECT set_config('synchronous_commit', 'off', true)), ", " CROSS JOIN unflushed") : ("", "")
        let held: [String: Int64] = try run { c in
            let r = try c.query("""
                WITH \(setting)v(job, chunk, taken, lines) AS (VALUES \(rows)),
                held AS (
                    SELECT q.job, q.chunk FROM queue_chunks q JOIN v ON q.job = v.job AND q.chunk = v.chunk\(join)
                    WHERE q.host = $1 AND q.taken = v.taken AND NOT q.done AND q.lease_until > clock_timestamp()
                    FOR KEY SHARE OF q)
                INSERT INTO queue_outcomes(job, chunk, lines)
                SELECT v.job, v.chunk, v.lines FROM v JOIN held ON held.job = v.job AND held.chunk = v.chunk
                RETURNING job, chunk, n
                """, values: parameters)
            return Dictionary((0..<r.count).map { (Self.key(r.text($0, 0) ?? "", Int(r.int64($0, 1))), r.int64($0, 2)) }) { a, _ in a }
        }
        var out: [Chunk: Int64] = [:]
        for b in batches { if let n = held[Self.key(b.chunk.job, b.chunk.number)] { out[b.chunk] = n } }
        return out
    }

    /// Completes a chunk this claim holds under a live lease (its outcomes are all recorded)
    /// and tells the hosts; false: its lease lapsed or was taken over (`ChunkLease`).
    public func complete(_ chunk: Chunk) throws(RegistryError) -> Bool {
        try transaction { c in
            let done = try c.query("""
                UPDATE queue_chunks SET done = true, lease_until = NULL
                WHERE job = $1 AND chunk = $2::int AND host = $3 AND taken = $4::int AND NOT done AND lease_until > clock_timestamp()
                """, [chunk.job, "\(chunk.number)", host, "\(chunk.taken)"]).affected == 1
            if done { try c.query("SELECT pg_notify($1, $2)", [Self.channel, "done " + chunk.job]) }
            return done
        }
    }

    /// Lets go of a chunk left unfinished (a stop, a pause, a cancel): any host may take it at
    /// once. Only under a live lease (`ChunkLease`): a lapsed one is anyone's already.
    public func release(_ chunk: Chunk) throws(RegistryError) {
        try transaction { c in
            try c.query("""
                UPDATE queue_chunks SET host = NULL, lease_until = NULL
                WHERE job = $1 AND chunk = $2::int AND host = $3 AND taken = $4::int AND NOT done AND lease_until > clock_timestamp()
                """, [chunk.job, "\(chunk.number)", host, "\(chunk.taken)"])
            try c.query("SELECT pg_notify($1, $2)", [Self.channel, "released " + chunk.job])
        }
    }

    /// The outcome lines recorded for one chunk, in the order they were written, but for the
    /// rows `excluding` (batches its origin has in its log already: sent on its own host).
    public func lines(job: String, chunk: Int, excluding: [Int64] = []) throws(RegistryError) -> [String] {
        try run { c in
            let r = try c.query("SELECT lines FROM queue_outcomes WHERE job = $1 AND chunk = $2::int AND n <> ALL($3::bigint[]) ORDER BY n",
                                [job, "\(chunk)", "{" + excluding.map(String.init).joined(separator: ",") + "}"])
            return (0..<r.count).map { r.text($0, 0) ?? "" }
        }
    }

    // MARK: The origin

    /// Where a job stands: its completed chunks not yet in the origin's log, whether chunks are
    /// still open (and held by a live lease), and its control.
    public struct Progress: Sendable {
        public var unapplied: [Int]
        public var open: Int
        public var leased: Int
        public var cutDone: Bool
        public var control: ControlRequest?
        public var finished: Bool { cutDone && open == 0 && unapplied.isEmpty }

        /// What the origin does next, once it wrote the completed chunks: end the job (every
        /// chunk in), end it as cancelled or keep it paused (once no host holds a chunk of it: their
        /// requests in flight are recorded), or wait for the next notification.
        public enum Next: Sendable, Equatable { case done, cancelled, paused, wait }

        /// Where the job stands once the origin wrote the completed chunks into its log: the
        /// last chunk's lines end the job at once, not at the next notification.
        public var written: Progress {
            var p = self
            p.unapplied = []
            return p
        }

        public var next: Next {
            if finished { return .done }
            guard leased == 0, let control else { return .wait }
            return control == .cancel ? .cancelled : .paused
        }
    }

    /// Where the job stands, read in one statement (one snapshot): read apart, a chunk that
    /// completed between reading the completed ones and counting the open ones was in neither,
    /// and the origin ended the job without its lines.
    public func progress(_ id: String) throws(RegistryError) -> Progress? {
        try run { c in
            let r = try c.query("""
                SELECT j.cut_done, j.control,
                       coalesce(string_agg(q.chunk::text, ',' ORDER BY q.chunk) FILTER (WHERE q.done AND NOT q.applied), ''),
                       count(q.chunk) FILTER (WHERE NOT q.done),
                       count(q.chunk) FILTER (WHERE NOT q.done AND q.host IS NOT NULL AND q.lease_until > clock_timestamp())
                FROM queue_jobs j LEFT JOIN queue_chunks q ON q.job = j.id WHERE j.id = $1 GROUP BY j.id
                """, [id])
            guard r.count == 1 else { return nil }
            return Progress(unapplied: (r.text(0, 2) ?? "").split(separator: ",").compactMap { Int($0) }, open: Int(r.int64(0, 3)),
                            leased: Int(r.int64(0, 4)), cutDone: r.text(0, 0) == "t",
                            control: r.text(0, 1).flatMap(ControlRequest.init(rawValue:)))
        }
    }

    /// Marks a completed chunk's lines as written to the origin's result log.
    public func markApplied(job: String, chunk: Int) throws(RegistryError) {
        try run { c in try c.query("UPDATE queue_chunks SET applied = true WHERE job = $1 AND chunk = $2::int", [job, "\(chunk)"]) }
    }

    /// The chunks of a cancelled job that were left unfinished, with outcomes recorded so far.
    public func unfinishedChunks(_ id: String) throws(RegistryError) -> [Int] {
        try run { c in
            let r = try c.query("SELECT chunk FROM queue_chunks WHERE job = $1 AND NOT applied AND NOT done ORDER BY chunk", [id])
            return (0..<r.count).map { Int(r.int64($0, 0)) }
        }
    }

    /// The job's summary line, written by its origin when the job ends: it then ends everywhere.
    public func end(_ id: String, summaryLine: String) throws(RegistryError) {
        try transaction { c in
            let ended = try c.query("UPDATE queue_jobs SET summary_line = $2, ended_at = clock_timestamp(), cut_done = true WHERE id = $1",
                                    [id, summaryLine]).affected
            guard ended == 1 else { return }
            try c.query("UPDATE queue_chunks SET done = true, host = NULL, lease_until = NULL WHERE job = $1 AND NOT done", [id])
            try c.query("SELECT pg_notify($1, $2)", [Self.channel, "ended " + id])
        }
    }

    // MARK: Retention

    /// Deletes what the queue holds of jobs that ended more than `age` seconds ago
    /// (`queue.keep_days`; their origins wrote their result logs long since): their chunks and
    /// outcome lines, `chunksPerStatement` chunks per statement, each on a connection taken
    /// for it, so that no transaction holds a large campaign's millions of lines and claims
    /// never wait for a free connection long; then the jobs. Any number of hosts may run it at
    /// once: chunks another host is deleting are skipped. At least one statement runs; `stop`
    /// is asked between the others. Returns the jobs deleted.
    @discardableResult
    public func purge(endedBefore age: Double, chunksPerStatement: Int = 20, stop: () -> Bool = { false }) throws(RegistryError) -> Int {
        let parameters = ["\(age)", "\(chunksPerStatement)"]
        var deleted: Int64
        repeat {
            deleted = try run { c in
                try c.query("""
                    WITH gone AS (
                        DELETE FROM queue_chunks WHERE (job, chunk) IN (
                            SELECT q.job, q.chunk FROM queue_chunks q JOIN queue_jobs j ON j.id = q.job
                            WHERE j.ended_at < clock_timestamp() - make_interval(secs => $1::float8)
                            LIMIT $2::int FOR UPDATE OF q SKIP LOCKED)
                        RETURNING job, chunk),
                    lines AS (DELETE FROM queue_outcomes o USING gone WHERE o.job = gone.job AND o.chunk = gone.chunk)
                    SELECT count(*) FROM gone
                    """, parameters).int64(0, 0)
            }
        } while deleted > 0 && !stop()
        // Jobs with no chunk left (another host may still be deleting some: the next pass
        // takes those jobs), with any line left of them.
        return try run { c in
            Int(try c.query("""
                WITH jobs AS (
                    DELETE FROM queue_jobs j WHERE j.ended_at < clock_timestamp() - make_interval(secs => $1::float8)
                        AND NOT EXISTS (SELECT 1 FROM queue_chunks q WHERE q.job = j.id)
                    RETURNING id),
                lines AS (DELETE FROM queue_outcomes o USING jobs WHERE o.job = jobs.id)
                SELECT count(*) FROM jobs
                """, [parameters[0]]).int64(0, 0))
        }
    }

    /// Seconds until the earliest ended job is `age` seconds old and `purge` would delete it;
    /// nil: no job has ended.
    public func nextPurge(endedBefore age: Double) throws(RegistryError) -> Double? {
        try run { c in
            let r = try c.query("""
                SELECT extract(epoch from min(ended_at) + make_interval(secs => $1::float8) - clock_timestamp()) FROM queue_jobs
                WHERE ended_at IS NOT NULL
                """, ["\(age)"])
            return r.isNull(0, 0) ? nil : max(0, r.double(0, 0))
        }
    }

    // MARK: Steering

    /// Sets (or with nil, clears) a job's cancel or pause request and tells every host; false:
    /// no such job in the queue, it has ended, or it is cancelled (a cancel is never undone).
    public func steer(_ id: String, _ request: ControlRequest?) throws(RegistryError) -> Bool {
        try transaction { c in
            let changed = try c.query("""
                UPDATE queue_jobs SET control = $2
                WHERE id = $1 AND ended_at IS NULL AND (control IS DISTINCT FROM 'cancel' OR $2 = 'cancel')
                """, [id, request?.rawValue]).affected == 1
            if changed { try c.query("SELECT pg_notify($1, $2)", [Self.channel, "control " + id]) }
            return changed
        }
    }

    /// The cancel and pause requests on running jobs, by id (every host's steering reads these).
    public func controls() throws(RegistryError) -> [String: ControlRequest] {
        try run { c in
            let r = try c.query("SELECT id, control FROM queue_jobs WHERE control IS NOT NULL AND ended_at IS NULL")
            var out: [String: ControlRequest] = [:]
            for i in 0..<r.count { if let k = r.text(i, 1).flatMap(ControlRequest.init(rawValue:)) { out[r.text(i, 0) ?? ""] = k } }
            return out
        }
    }

    // MARK: Reading

    /// A job's result log as the queue holds it: its job line, every recorded outcome line
    /// (chunk by chunk) and its summary line once it ended; each piece goes to `write` as it is
    /// read (a chunk at a time: bounded memory). False: no such job.
    public func results(_ id: String, _ write: (String) throws -> Void) throws -> Bool {
        guard let row = try job(id) else { return false }
        try write(row.jobLine.hasSuffix("\n") ? row.jobLine : row.jobLine + "\n")
        let chunks: [Int] = try run { c in
            let r = try c.query("SELECT DISTINCT chunk FROM queue_outcomes WHERE job = $1 ORDER BY chunk", [id])
            return (0..<r.count).map { Int(r.int64($0, 0)) }
        }
        for chunk in chunks { for lines in try self.lines(job: id, chunk: chunk) { try write(lines) } }
        if let summary = try job(id)?.summaryLine { try write(summary.hasSuffix("\n") ? summary : summary + "\n") }
        return true
    }

    /// Each host's last report, for `status`.
    public struct HostRow: Sendable {
        public var host: String
        public var secondsAgo: Double
        public var chunks: Int
        public var sent: Int64
        public var rate: Double
    }

    /// A host whose listening connection is open holds its presence lock (`presenceLock`) and
    /// is seen now; another was last seen at its last report (at start, and while it held
    /// chunks, at each renewal): an idle host reports nothing.
    public func hosts() throws(RegistryError) -> [HostRow] {
        try run { c in
            let r = try c.query("""
                SELECT host, CASE WHEN live THEN 0 ELSE extract(epoch from clock_timestamp() - seen_at) END, chunks, sent, rate
                FROM (SELECT h.*, EXISTS (SELECT 1 FROM pg_locks l
                                          WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                                            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                                            AND l.classid = $1::int::oid AND l.objid = hashtext(h.host)::oid) AS live
                      FROM queue_hosts h) hosts
                WHERE live OR seen_at > clock_timestamp() - interval '1 hour' ORDER BY host
                """, ["\(Self.presenceKey)"])
            return (0..<r.count).map { HostRow(host: r.text($0, 0) ?? "", secondsAgo: r.double($0, 1), chunks: Int(r.int64($0, 2)),
                                                sent: r.int64($0, 3), rate: r.double($0, 4)) }
        }
    }

    /// Jobs still running in the queue, with their chunks open and held, for `status`.
    public struct JobSummary: Sendable {
        public var id: String
        public var origin: String
        public var chunks: Int
        public var done: Int
        public var leases: [String: Int]
        public var control: ControlRequest?
    }

    public func running() throws(RegistryError) -> [JobSummary] {
        try run { c in
            let r = try c.query("""
                SELECT j.id, j.origin, count(q.chunk), count(q.chunk) FILTER (WHERE q.done), j.control,
                       coalesce(string_agg(q.host, '\u{1F}') FILTER (WHERE NOT q.done AND q.host IS NOT NULL AND q.lease_until > clock_timestamp()), '')
                FROM queue_jobs j LEFT JOIN queue_chunks q ON q.job = j.id
                WHERE j.ended_at IS NULL GROUP BY j.id ORDER BY j.created_at LIMIT 100
                """)
            return (0..<r.count).map { i in
                var leases: [String: Int] = [:]
                for h in (r.text(i, 5) ?? "").split(separator: "\u{1F}") { leases[String(h), default: 0] += 1 }
                return JobSummary(id: r.text(i, 0) ?? "", origin: r.text(i, 1) ?? "", chunks: Int(r.int64(i, 2)), done: Int(r.int64(i, 3)),
                                  leases: leases, control: r.text(i, 4).flatMap(ControlRequest.init(rawValue:)))
            }
        }
    }
}

/// Waits for the queue's notifications on a connection of its own (`LISTEN pushspool_queue`),
/// reconnecting with backoff when the database goes away. It sleeps in `poll(2)` on the
/// connection's socket and on its `stop()`: a notification or a stop wakes it at once, nothing
/// else does until the quiet `timeout`. Its connection is one of the process's pool
/// (`PostgresPool.openDedicated`): the pool's size counts it.
public final class QueueListener: Sendable {
    private let pool: PostgresPool
    private let stopped = StopEvent()
    /// The host whose presence its connection holds (`PostgresJobQueue.presenceLock`), if any.
    private let presence: String?

    init(pool: PostgresPool, presence: String? = nil) {
        self.pool = pool
        self.presence = presence
    }

    /// On a pool of one connection of its own (a test's second host).
    public convenience init(uri: String) { self.init(pool: PostgresPool(uri: uri, maxConnections: 1)) }

    /// Ends `listen` at once (from any thread).
    public func stop() { stopped.set() }

    /// Calls `heard` with each notification's payload (and with nil when it (re)connected, as
    /// anything said meanwhile was missed, and after each `timeout` of silence when one is
    /// given) until `stop()`, or until `stop` says so when it is next asked (after a
    /// notification or a quiet `timeout`). With no `timeout` it makes no statement and no
    /// wake-up while nothing is said: the socket's keepalives find a dead connection.
    public func listen(timeout: Double = .infinity, stop: @Sendable () -> Bool = { false }, _ heard: @Sendable (String?) -> Void) {
        var connection: PostgresConnection?
        var backoff = 0.25
        var quietSince = Date()
        while !stop(), !stopped.isSet {
            do {
                if connection == nil {
                    let c = try pool.openDedicated()
                    do {
                        try c.execute("LISTEN \(PostgresJobQueue.channel)")
                        if let presence { try PostgresJobQueue.presenceLock(presence, on: c) }
                    } catch {
                        pool.closeDedicated(c)
                        throw error
                    }
                    connection = c
                    backoff = 0.25
                    heard(nil)    // reconnected: anything said meanwhile was missed
                    quietSince = Date()
                }
                let payloads = try connection!.notifications(timeout: timeout - Date().timeIntervalSince(quietSince), stop: stopped)
                if stopped.isSet { break }
                if payloads.isEmpty {
                    guard Date().timeIntervalSince(quietSince) >= timeout else { continue }
                    heard(nil)
                } else {
                    for p in payloads { heard(p) }
                }
                quietSince = Date()
            } catch {
                if let connection { pool.closeDedicated(connection) }
                connection = nil
                heard(nil)
                stopped.wait(seconds: min(backoff, timeout, 5))
                backoff = min(backoff * 2, 5)
            }
        }
        if let connection { pool.closeDedicated(connection) }
    }
}

extension PostgresJobQueue {
    /// One job as the queue holds it, ended or not, for `GET /v1/jobs/{id}` on a host that did
    /// not accept it: its origin, its chunks (done, cut so far, whether the cut is over), the
    /// leases held on it per host, its control, and its summary line once it ended.
    public struct JobEntry: Sendable {
        public var job: JobSummary
        public var cutDone: Bool
        public var targets: Int?
        public var summaryLine: String?
    }

    public func entry(_ id: String) throws(RegistryError) -> JobEntry? {
        guard let row = try job(id) else { return nil }
        return try run { c in
            let counts = try c.query("SELECT count(*), count(*) FILTER (WHERE done) FROM queue_chunks WHERE job = $1", [id])
            let held = try c.query("""
                SELECT host, count(*) FROM queue_chunks WHERE job = $1 AND NOT done AND host IS NOT NULL AND lease_until > clock_timestamp()
                GROUP BY host
                """, [id])
            let leases = Dictionary(uniqueKeysWithValues: (0..<held.count).map { (held.text($0, 0) ?? "", Int(held.int64($0, 1))) })
            let job = JobSummary(id: row.id, origin: row.origin, chunks: Int(counts.int64(0, 0)), done: Int(counts.int64(0, 1)),
                                 leases: leases, control: row.control)
            return JobEntry(job: job, cutDone: row.cutDone, targets: row.targets, summaryLine: row.summaryLine)
        }
    }
}
