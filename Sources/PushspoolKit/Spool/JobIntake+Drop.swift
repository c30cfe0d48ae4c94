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
        /// The durable write, whose folder fsync is a seam for tests.
        let file: DurableFile

        /// Temporary names unique across every drop of the process.
        private static let sequence = Atomic<Int>(0)

        init(spool: Spool, syncDirectory: (@Sendable (URL) throws -> Void)? = nil) {
            self.spool = spool
            file = DurableFile(syncDirectory: syncDirectory)
        }

        /// Writes `jobs` as `incoming/<name>`; one outcome each, in order.
        func write(_ jobs: [(bytes: [UInt8], name: String)]) -> [Outcome] {
            let first = Self.sequence.wrappingAdd(jobs.count, ordering: .relaxed).oldValue
            // 1–3. Each job written to a temporary of its own, fsynced (writeback started for
            // the group at once), renamed into incoming/ never over a waiting job…
            let items = jobs.enumerated().map { i, job in
                // A secure job's file holds its text: its owner's alone (§ The app talks back).
                DurableFile.Item(bytes: job.bytes, temporary: spool.url(.tmp, ".\(job.name).\(getpid()).\(first + i).tmp"),
                                 destination: spool.url(.incoming, job.name), mode: JobParser.isSecure(job.bytes) ? 0o600 : nil)
            }
            let group = file.write(items, mode: 0o640, placement: .neverReplacing)
            // 4. …and one fsync of incoming/ makes every rename of the group durable.
            return group.files.enumerated().map { i, placed in
                switch placed {
                case .renamed(let identity):
                    guard let why = group.folderFailure else { return .queued }
                    let what = takeBack(jobs[i].name, to: items[i].temporary.path, identity: identity)
                    return .failed("cannot make incoming/ durable: \(why); \(what)")
                case .exists: return .exists
                case .failed(.write(let why)): return .failed("cannot write into tmp/: \(why)")
                case .failed(.rename(let why)): return .failed("cannot move the job into incoming/: \(why)")
                }
            }
        }

        /// Takes a job that is not durable back out of `incoming/` (see the type's comment) to
        /// its temporary name, and removes it there only when it is this drop's own file: what
        /// became of it.
        private func takeBack(_ name: String, to tmp: String, identity: DurableFile.Identity?) -> String {
            let incoming = spool.url(.incoming, name).path
            guard csystem_rename_noreplace(incoming, tmp) == 0 else {
                return errno == ENOENT ? "a dispatcher had already taken it" : "it could not be taken back: \(String(cString: strerror(errno)))"
            }
            if let identity, identity.matches(tmp) {
                unlink(tmp)
                return "nothing was queued"
            }
            // Another writer's job of the same name: back where it was.
            if csystem_rename_noreplace(tmp, incoming) == 0 { return "a dispatcher had already taken it" }
            return "another writer's job of that name could not be put back and is kept in \(tmp)"
        }
    }
}
