import CSystem
import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Drops job files into the spool for `serve`, durably and with fsyncs grouped across
/// concurrent requests (group commit). The writing itself is `JobIntake.Drop`, the one way a job
/// file enters `incoming/`: `pushspool submit` (`Spool.submit`) drops a group of one through it.
///
/// Each job is written to `tmp/`, fsynced, renamed into `incoming/` (never over another file),
/// and `incoming/` is fsynced before its completion runs: a `2xx` sent from the completion
/// promises a job that survives a power loss, as `pushspool submit` does. Jobs that arrive while
/// a group is being written wait for the next group, which takes all of them at once, so the
/// folder's fsync (and the journal commit behind the files' fsyncs) is paid once per group, not
/// once per job. A job that cannot be made durable leaves nothing in `incoming/` or `tmp/`.
public final class JobIntake: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// In `incoming/`, durably.
        case queued
        /// A file with that name is already waiting in `incoming/`: nothing was written.
        case exists
        /// Nothing was written (full disk, I/O error, a spool folder gone); the reason names no secret.
        case failed(String)
    }

    private struct Pending {
        var bytes: [UInt8]
        var name: String
        var completion: @Sendable (Outcome) -> Void
    }

    private struct State {
        var pending: [Pending] = []
        var writing = false
    }

    private let drop: Drop
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "pushspool.intake")
    /// Groups and jobs written so far.
    private let groups = Atomic<Int>(0)
    private let jobs = Atomic<Int>(0)

    public init(spool: Spool) { drop = Drop(spool: spool) }

    /// A seam for tests: `drop` with a directory fsync that fails on cue.
    init(drop: Drop) { self.drop = drop }

    /// A new job id for a job that brings none: `job-<unix time>-<8 hex digits>`.
    public static func newID(prefix: String = "job") -> String {
        "\(prefix)-\(Int(Date().timeIntervalSince1970))-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// How many groups have been written: with many concurrent submissions, far fewer than jobs.
    public var groupsWritten: Int { groups.load(ordering: .relaxed) }
    public var jobsWritten: Int { jobs.load(ordering: .relaxed) }

    /// Queues `bytes` as `incoming/<name>`; `completion` runs once, on the intake's queue.
    public func submit(_ bytes: [UInt8], name: String, completion: @escaping @Sendable (Outcome) -> Void) {
        let start = state.withLock { s -> Bool in
            s.pending.append(Pending(bytes: bytes, name: name, completion: completion))
            if s.writing { return false }
            s.writing = true
            return true
        }
        if start { queue.async { self.drain() } }
    }

    private func drain() {
        while true {
            let group = state.withLock { s -> [Pending] in
                let group = s.pending
                s.pending = []
                if group.isEmpty { s.writing = false }
                return group
            }
            if group.isEmpty { return }
            write(group)
        }
    }

    private func write(_ group: [Pending]) {
        groups.add(1, ordering: .relaxed)
        jobs.add(group.count, ordering: .relaxed)
        let outcomes = drop.write(group.map { ($0.bytes, $0.name) })
        for (i, job) in group.enumerated() { job.completion(outcomes[i]) }
    }
}
