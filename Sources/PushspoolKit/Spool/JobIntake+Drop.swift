import CSystem
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension JobIntake {
    /// The one durable-drop protocol, for every door a job comes in by (`submit`, the job API,
    /// the tutorial API): each file written to `tmp/` under a name of its own, fsynced, renamed
    /// into `incoming/` without replacing anything, and `incoming/` fsynced once for the group.
    ///
    /// Failure rules, the same for every caller: a job that fails leaves nothing of its own
    /// behind (its temporary is removed, by its own unique name), and nothing of anyone else's
    /// is ever removed. When the fsync of `incoming/` fails, each renamed job is taken back by
    /// renaming `incoming/<name>` to its own temporary name (never over a file) and removed only
    /// when that file is the very one it wrote (same device and inode): another writer may have
    /// dropped a job of that name after a dispatcher claimed this one, and that job is put back.
    /// A job a dispatcher claimed before it could be taken back is in `active/` and will be sent;
    /// the caller is told it failed and its retry finds the job by its id.
    struct Drop: Sendable {
        let spool: Spool
        /// `FileIO.syncDirectory`; a seam for tests.
        var syncDirectory: @Sendable (URL) throws -> Void = { try FileIO.syncDirectory($0) }

        /// Temporary names unique across every drop of the process.
        private static let sequence = Atomic<Int>(0)

        init(spool: Spool, syncDirectory: (@Sendable (URL) throws -> Void)? = nil) {
            self.spool = spool
            if let syncDirectory { self.syncDirectory = syncDirectory }
        }

        /// Writes `jobs` as `incoming/<name>`; one outcome each, in order.
        func write(_ jobs: [(bytes: [UInt8], name: String)]) -> [Outcome] {
            let first = Self.sequence.wrappingAdd(jobs.count, ordering: .relaxed).oldValue
            var outcomes = [Outcome?](repeating: nil, count: jobs.count)
            var temporaries = [String?](repeating: nil, count: jobs.count)
            var identities = [(dev: UInt64, ino: UInt64)?](repeating: nil, count: jobs.count)
            // 1. Every file written and closed…
            var descriptors: [(Int, Int32)] = []
            for (i, job) in jobs.enumerated() {
                let tmp = spool.url(.tmp, ".\(job.name).\(getpid()).\(first + i).tmp").path
                // A secure job's file holds its text: its owner's alone (§ The app talks back).
                let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, JobParser.isSecure(job.bytes) ? 0o600 : 0o640)
                guard fd >= 0 else {
                    outcomes[i] = .failed("cannot write into tmp/: \(String(cString: strerror(errno)))")
                    continue
                }
                temporaries[i] = tmp
                var st = stat()
                if fstat(fd, &st) == 0 { identities[i] = (UInt64(st.st_dev), UInt64(st.st_ino)) }
                do {
                    try FileIO.writeAll(fd, job.bytes)
                    descriptors.append((i, fd))
                } catch {
                    close(fd)
                    outcomes[i] = .failed("cannot write into tmp/: \(error)")
                }
            }
            // 2. …their writeback started together (Linux), so the first fsync's journal commit
            // carries the others' block allocations and their own fsyncs find little left to do…
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
            for i in jobs.indices where outcomes[i] == nil {
                guard let tmp = temporaries[i] else { continue }
                if csystem_rename_noreplace(tmp, spool.url(.incoming, jobs[i].name).path) == 0 {
                    renamed.append(i)
                } else {
                    outcomes[i] = errno == EEXIST ? .exists : .failed("cannot move the job into incoming/: \(String(cString: strerror(errno)))")
                }
            }
            // 4. One fsync of incoming/ makes every rename of the group durable.
            if !renamed.isEmpty {
                do {
                    try syncDirectory(spool.url(.incoming))
                    for i in renamed {
                        outcomes[i] = .queued
                        temporaries[i] = nil
                    }
                } catch {
                    for i in renamed {
                        let (what, ours) = takeBack(jobs[i].name, to: temporaries[i]!, identity: identities[i])
                        outcomes[i] = .failed("cannot make incoming/ durable: \(error); \(what)")
                        if !ours { temporaries[i] = nil }
                    }
                }
            }
            // 5. What is left in tmp/ under this drop's own names is this drop's: removed.
            for tmp in temporaries.compactMap({ $0 }) { unlink(tmp) }
            return outcomes.map { $0 ?? .failed("not written") }
        }

        /// Takes a job that is not durable back out of `incoming/` (see the type's comment):
        /// what became of it, and whether `tmp` now holds this drop's own file (to remove).
        private func takeBack(_ name: String, to tmp: String, identity: (dev: UInt64, ino: UInt64)?) -> (String, ours: Bool) {
            let incoming = spool.url(.incoming, name).path
            guard csystem_rename_noreplace(incoming, tmp) == 0 else {
                let why = errno == ENOENT ? "a dispatcher had already taken it" : "it could not be taken back: \(String(cString: strerror(errno)))"
                return (why, false)
            }
            var st = stat()
            if let identity, stat(tmp, &st) == 0, UInt64(st.st_dev) == identity.dev, UInt64(st.st_ino) == identity.ino {
                return ("nothing was queued", true)
            }
            // Another writer's job of the same name: back where it was.
            if csystem_rename_noreplace(tmp, incoming) == 0 { return ("a dispatcher had already taken it", false) }
            return ("another writer's job of that name could not be put back and is kept in \(tmp)", false)
        }
    }
}
