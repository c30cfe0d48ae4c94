import Foundation
import PushspoolCore

// A chunk's life, 2: one host at a time cuts a job's audience into chunks as it reads it.
extension PostgresJobQueue {
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
}
