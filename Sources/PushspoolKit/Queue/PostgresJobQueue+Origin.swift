import Foundation
import PushspoolCore

// The job's origin: it reads the chunks other hosts completed into its result log and ends the job.
extension PostgresJobQueue {
    /// The outcome lines recorded for one chunk, in the order they were written, but for the
    /// rows `excluding` (batches its origin has in its log already: sent on its own host).
    public func lines(job: String, chunk: Int, excluding: [Int64] = []) throws(RegistryError) -> [String] {
        var out: [String] = []
        do { try forEachBatch(job: job, chunk: chunk, excluding: excluding) { out.append($0) } } catch { throw RegistryError.from(error) }
        return out
    }

    /// `lines`, streamed: each batch goes to `each` as it is read, `pageSize` rows a statement
    /// (keyset pages on the row's `n`, each on a connection borrowed for it and given back before
    /// `each` runs), so a chunk's lines are never all in memory and no connection waits on `each`.
    public func forEachBatch(job: String, chunk: Int, excluding: [Int64] = [], pageSize: Int = 64,
                             _ each: (String) throws -> Void) throws {
        let skipped = "{" + excluding.map(String.init).joined(separator: ",") + "}"
        try KeysetPages.run(after: 0, through: .max, limit: pageSize, lastPage: {}, key: { (row: (n: Int64, lines: String)) in row.n },
                            fetch: { after in
                                try run { c in
                                    let r = try c.query("""
                                        SELECT n, lines FROM queue_outcomes WHERE job = $1 AND chunk = $2::int AND n > $3::bigint
                                          AND n <> ALL($4::bigint[]) ORDER BY n LIMIT $5::int
                                        """, [job, "\(chunk)", "\(after)", skipped, "\(pageSize)"])
                                    return (0..<r.count).map { (n: r.int64($0, 0), lines: r.text($0, 1) ?? "") }
                                }
                            }) { row in
            try each(row.lines)
            return true
        }
    }


    /// Where a job stands: its completed chunks not yet in the origin's log, whether chunks are
    /// still open (and held by a live lease), and its control.
    public struct Progress: Sendable {
        public var unapplied: [Int]
        public var open: Int
        public var leased: Int
        public var cutDone: Bool
        public var control: ControlRequest?
        /// Seconds until the earliest live lease on one of its chunks runs out; nil: none runs.
        public var leaseEnds: Double? = nil
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

        /// When the origin must look again though no notification comes, in seconds; nil: only
        /// on a notification. A steered job ends once no host holds a chunk of it, and a lease
        /// that runs out (its holder died) tells no one, while no host takes a steered job's
        /// chunk over to complete or release it: the origin looks just after the earliest lease
        /// ends. An unsteered job's lapsed chunk is taken over, and its end announced.
        public var look: Double? {
            guard next == .wait, control != nil, let leaseEnds else { return nil }
            return leaseEnds + ChunkSlots.afterLapse
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
                       count(q.chunk) FILTER (WHERE NOT q.done AND q.host IS NOT NULL AND q.lease_until > clock_timestamp()),
                       extract(epoch from min(q.lease_until) FILTER (WHERE NOT q.done AND q.host IS NOT NULL
                                                                      AND q.lease_until > clock_timestamp()) - clock_timestamp())
                FROM queue_jobs j LEFT JOIN queue_chunks q ON q.job = j.id WHERE j.id = $1 GROUP BY j.id
                """, [id])
            guard r.count == 1 else { return nil }
            return Progress(unapplied: (r.text(0, 2) ?? "").split(separator: ",").compactMap { Int($0) }, open: Int(r.int64(0, 3)),
                            leased: Int(r.int64(0, 4)), cutDone: r.text(0, 0) == "t",
                            control: r.text(0, 1).flatMap(ControlRequest.init(rawValue:)),
                            leaseEnds: r.isNull(0, 5) ? nil : max(0, r.double(0, 5)))
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
}
