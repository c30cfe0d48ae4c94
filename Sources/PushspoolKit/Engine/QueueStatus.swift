import Foundation
import PushspoolCore

/// What `status` and `GET /v1/jobs/{id}` say about the job queue every host on one PostgreSQL
/// registry shares (README "Several hosts"), read from the database: the hosts taking chunks,
/// each with its last report, and the jobs running in the queue with the leases held on them.
public struct QueueStatus: Sendable {
    public let queue: PostgresJobQueue

    public init(queue: PostgresJobQueue) {
        self.queue = queue
    }

    /// `status --json`'s `"queue"`: `{"location", "hosts": [...], "jobs": [...]}`.
    public func json() throws(RegistryError) -> JSONValue {
        let hosts = try queue.hosts()
        let jobs = try queue.running()
        return .object([
            ("location", .string(queue.location)),
            ("hosts", .array(hosts.map(Self.json))),
            ("jobs", .array(jobs.map { .object(Self.fields($0)) })),
        ])
    }

    /// `GET /v1/jobs/{id}` for a job this host's spool does not hold but the queue does (another
    /// host accepted it): where it stands, and once it ended its summary's counts. nil: the
    /// queue does not know it either.
    public func lookup(id: String) throws(RegistryError) -> JSONValue? {
        guard let entry = try queue.entry(id) else { return nil }
        let summary = entry.summaryLine.flatMap { line -> ResultRecord.Summary? in
            if case .summary(let s)? = ResultRecord(line: Array(line.utf8)) { return s }
            return nil
        }
        // Ended: the state its summary gives (as on the host that accepted it), and its counts.
        var fields = Self.fields(entry.job, ended: summary.map { JobState($0.status).rawValue } ?? (entry.summaryLine == nil ? nil : "ended"))
        fields += [("cut_done", .bool(entry.cutDone)), ("targets", entry.targets.map { .int(Int64($0)) } ?? .null)]
        let named = Set(fields.map(\.0))
        fields += summary?.fields.filter { !named.contains($0.0) } ?? []
        return .object(fields)
    }

    static func json(_ host: PostgresJobQueue.HostRow) -> JSONValue {
        .object([
            ("host", .string(host.host)),
            ("seen_s_ago", .double((host.secondsAgo * 10).rounded() / 10)),
            ("chunks", .int(Int64(host.chunks))),
            ("sent", .int(host.sent)),
            ("rate_per_s", .int(Int64(host.rate.rounded()))),
        ])
    }

    /// A queued job's entry: `state` (`running`, `paused`, `cancelling`; `ended`, the state
    /// given, once its origin wrote the summary), its origin host, chunks done of those cut so
    /// far, and the leases each host holds on it now.
    static func fields(_ job: PostgresJobQueue.JobSummary, ended: String? = nil) -> [(String, JSONValue)] {
        let state: String = switch (ended, job.control) {
        case (let ended?, _): ended
        case (nil, .cancel?): JobState.cancelling.rawValue
        case (nil, .pause?): JobState.paused.rawValue
        case (nil, nil): JobState.running.rawValue
        }
        return [
            ("id", .string(job.id)),
            ("running", .bool(ended == nil && job.control == nil)),
            ("state", .string(state)),
            ("origin", .string(job.origin)),
            ("chunks_done", .int(Int64(job.done))),
            ("chunks", .int(Int64(job.chunks))),
            ("leases", .object(job.leases.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
            ("control", job.control.map { .string($0.rawValue) } ?? .null),
        ]
    }

    /// `status`'s lines for the queue (under `shared queue in <location>`).
    public static func lines(_ queue: JSONValue) -> [String] {
        var out: [String] = []
        if case .array(let hosts)? = queue["hosts"] {
            if hosts.isEmpty { out.append("no host has reported") }
            for h in hosts {
                let ago = h["seen_s_ago"].flatMap { if case .double(let s) = $0 { return s } else { return nil } } ?? 0
                out.append("host \(h["host"]?.stringValue ?? "?"): seen \(Metrics.number(ago)) s ago, \(int(h["chunks"])) chunk(s) held, "
                           + "\(int(h["sent"])) sent, \(int(h["rate_per_s"]))/s")
            }
        }
        if case .array(let jobs)? = queue["jobs"] {
            for j in jobs {
                var line = "\(j["state"]?.stringValue ?? "?") \(j["id"]?.stringValue ?? "?") from \(j["origin"]?.stringValue ?? "?"): "
                    + "\(int(j["chunks_done"]))/\(int(j["chunks"])) chunks done"
                if case .object(let leases)? = j["leases"], !leases.isEmpty {
                    line += ", leases " + leases.map { "\($0.0) ×\(int($0.1))" }.joined(separator: ", ")
                }
                out.append(line)
            }
        }
        return out
    }

    private static func int(_ v: JSONValue?) -> Int64 {
        if case .int(let n)? = v { return n }
        return 0
    }
}
