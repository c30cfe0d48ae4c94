import Foundation
import PushspoolCore

// Jobs that ended more than `queue.keep_days` ago leave the queue.
extension PostgresJobQueue {
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
}
