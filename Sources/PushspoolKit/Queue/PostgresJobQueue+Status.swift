import Foundation
import PushspoolCore

// What `status`, `results` and `GET /v1/jobs/{id}` read of the queue.
extension PostgresJobQueue {
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
        for chunk in chunks { try forEachBatch(job: id, chunk: chunk, write) }
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
