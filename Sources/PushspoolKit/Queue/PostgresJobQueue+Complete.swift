import Foundation
import PushspoolCore

// A chunk's life, 5: its holder records its outcomes, a batch per row, and completes it.
extension PostgresJobQueue {
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
}
