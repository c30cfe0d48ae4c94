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
/// concurrent requests (group commit).
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
        var sequence = 0
    }

    private let spool: Spool
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "pushspool.intake")
    /// Groups and jobs written so far.
    private let groups = Atomic<Int>(0)
    private let jobs = Atomic<Int>(0)

    public init(spool: Spool) { self.spool = spool }

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
            let (group, first) = state.withLock { s -> ([Pending], Int) in
                let group = s.pending
                s.pending = []
                if group.isEmpty { s.writing = false }
                let first = s.sequence
                s.sequence += group.count
                return (group, first)
            }
            if group.isEmpty { return }
            write(group, firstSequence: first)
        }
    }

    private func write(_ group: [Pending], firstSequence: Int) {
        groups.add(1, ordering: .relaxed)
        jobs.add(group.count, ordering: .relaxed)
        var outcomes = [Outcome?](repeating: nil, count: group.count)
        var temporaries = [String?](repeating: nil, count: group.count)
        // 1. Every file written and closed…
        var descriptors: [(Int, Int32)] = []
        for (i, job) in group.enumerated() {
            let tmp = spool.url(.tmp, ".\(job.name).\(getpid()).\(firstSequence + i).tmp").path
            let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o640)
            guard fd >= 0 else {
                outcomes[i] = .failed("cannot write into tmp/: \(String(cString: strerror(errno)))")
                continue
            }
            temporaries[i] = tmp
            do {
                try FileIO.writeAll(fd, job.bytes)
                descriptors.append((i, fd))
            } catch {
                close(fd)
                outcomes[i] = .failed("cannot write into tmp/: \(error)")
            }
        }
        // 2. …their writeback started together (Linux), so the first fsync's journal commit
        // carries the others' block allocations and their own fsyncs find little left to do;
        // fsynced one after the other, each file's data went out with a journal commit of its own.
        #if os(Linux)
        for (_, fd) in descriptors { _ = sync_file_range(fd, 0, 0, UInt32(SYNC_FILE_RANGE_WRITE)) }
        #endif
        // …then fsynced.
        for (i, fd) in descriptors {
            if fsync(fd) != 0 { outcomes[i] = .failed("cannot write into tmp/: fsync: \(String(cString: strerror(errno)))") }
            close(fd)
        }
        // 3. Renamed into incoming/, never over a waiting job.
        var renamed: [Int] = []
        for i in group.indices where outcomes[i] == nil {
            guard let tmp = temporaries[i] else { continue }
            if csystem_rename_noreplace(tmp, spool.url(.incoming, group[i].name).path) == 0 {
                renamed.append(i)
                temporaries[i] = nil
            } else {
                outcomes[i] = errno == EEXIST ? .exists : .failed("cannot move the job into incoming/: \(String(cString: strerror(errno)))")
            }
        }
        // 4. One fsync of incoming/ makes every rename of the group durable.
        if !renamed.isEmpty {
            do {
                try FileIO.syncDirectory(spool.url(.incoming))
                for i in renamed { outcomes[i] = .queued }
            } catch {
                // Not durable: take the jobs back out rather than promise them (a dispatcher
                // that claimed one already has it in active/, where it is safe, and the
                // client's retry finds it by its id).
                for i in renamed {
                    unlink(spool.url(.incoming, group[i].name).path)
                    outcomes[i] = .failed("cannot make incoming/ durable: \(error)")
                }
            }
        }
        for tmp in temporaries.compactMap({ $0 }) { unlink(tmp) }
        for (i, job) in group.enumerated() { job.completion(outcomes[i] ?? .failed("not written")) }
    }
}
