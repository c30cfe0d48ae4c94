import Foundation
import PushspoolCore

// A chunk's life, 1: a job is published (with its single-request chunk 0 when a service resolves its audience).
extension PostgresJobQueue {
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
}
