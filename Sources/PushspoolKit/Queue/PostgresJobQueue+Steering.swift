import Foundation
import PushspoolCore

// Cancel and pause requests any host makes, read by every host.
extension PostgresJobQueue {
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
}
