import CSystem
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one durable file write of the spool (job drops, hub marks, webhook batches, control
/// requests): a file is written whole under a temporary name of its own, fsynced, renamed to
/// its name, and its folder fsynced, so a reader or a crash sees the old state or the new one,
/// never half a file, and a rename reported done survives a power loss.
///
/// A group of files (`write(_:mode:placement:)`) pays the folder's fsync once, and on Linux
/// starts every file's writeback at once (`sync_file_range`) before fsyncing them one by one:
/// the first fsync's journal commit carries the others' block allocations.
///
/// Failure rules: a file that fails before its rename leaves nothing (its temporary, which no
/// one else may hold since it is created with `O_EXCL`, is removed). A rename that is done stays
/// done even when the folder's fsync then fails: that is reported (`Group.folderFailure`) and
/// what to undo is the caller's call (`JobIntake.Drop` takes its jobs back; a webhook batch is
/// written again, and receivers dedup).
struct DurableFile: Sendable {
    /// Fsyncs a folder (`FileIO.syncDirectory`); a seam for tests, which make it fail on cue.
    var syncDirectory: @Sendable (URL) throws -> Void

    init(syncDirectory: (@Sendable (URL) throws -> Void)? = nil) {
        self.syncDirectory = syncDirectory ?? { try FileIO.syncDirectory($0) }
    }

    /// What the rename does to a file already at the destination.
    enum Placement: Sendable {
        /// Takes its place (the reader sees the old file or the new one).
        case replacing
        /// Fails with `.exists` instead (`renameat2(RENAME_NOREPLACE)`): a job never overwrites a job.
        case neverReplacing
    }

    /// One file to write: its bytes, the temporary it is written as (in the destination's file
    /// system, unique to this writer), its name, and its own mode where it differs from the
    /// group's (a secure job's file is its owner's alone).
    struct Item: Sendable {
        var bytes: [UInt8]
        var temporary: URL
        var destination: URL
        var mode: mode_t? = nil
    }

    /// A temporary name for `destination`, hidden (a leading dot) and unique to this write even
    /// beside a crashed process's leftover of the same pid, in `folder` (default: the
    /// destination's; it must be in the same file system).
    static func temporary(for destination: URL, in folder: URL? = nil) -> URL {
        (folder ?? destination.deletingLastPathComponent())
            .appendingPathComponent(".\(destination.lastPathComponent).\(getpid()).\(UUID().uuidString.prefix(8)).tmp")
    }

    /// The file a temporary was, told apart from another file renamed to the same name later.
    struct Identity: Sendable, Equatable {
        var device: UInt64, inode: UInt64

        /// Whether the file at `path` is this one.
        func matches(_ path: String) -> Bool {
            var st = stat()
            return stat(path, &st) == 0 && UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode
        }
    }

    /// The step a file failed at, with the system's reason.
    enum Failure: Sendable, Equatable {
        /// Its temporary could not be created or written, or its fsync failed (`fsync: …`).
        case write(String)
        /// The rename to its name failed.
        case rename(String)
    }

    /// Where one file of a group stands after `write`.
    enum Placed: Sendable, Equatable {
        /// At its name (durably so unless the group's `folderFailure` says otherwise).
        case renamed(Identity?)
        /// `neverReplacing`, and a file of that name was there: nothing was written.
        case exists
        /// Nothing of it is left.
        case failed(Failure)
    }

    struct Group: Sendable {
        var files: [Placed]
        /// Why a folder's fsync failed: its renames are done but may not survive a crash.
        var folderFailure: String?
    }

    /// Writes every item, in order: (1) each temporary created and written, (2) their writeback
    /// started together, then each fsynced, (3) each renamed to its name, (4) each folder that
    /// received a rename fsynced once.
    func write(_ items: [Item], mode: mode_t, placement: Placement, syncFolder: Bool = true) -> Group {
        var placed = [Placed?](repeating: nil, count: items.count)
        var identities = [Identity?](repeating: nil, count: items.count)
        var written: [(Int, Int32)] = []
        // 1. Every file written…
        for (i, item) in items.enumerated() {
            let fd = open(item.temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, item.mode ?? mode)
            guard fd >= 0 else {
                placed[i] = .failed(.write(FileIO.errnoText()))
                continue
            }
            var st = stat()
            if fstat(fd, &st) == 0 { identities[i] = Identity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino)) }
            do {
                try FileIO.writeAll(fd, item.bytes)
                written.append((i, fd))
            } catch {
                close(fd)
                placed[i] = .failed(.write("\(error)"))
            }
        }
        // 2. …their writeback started together (Linux), then each fsynced.
        #if os(Linux)
        if written.count > 1 { for (_, fd) in written { _ = sync_file_range(fd, 0, 0, UInt32(SYNC_FILE_RANGE_WRITE)) } }
        #endif
        for (i, fd) in written {
            if fsync(fd) != 0 { placed[i] = .failed(.write("fsync: \(FileIO.errnoText())")) }
            close(fd)
        }
        // 3. Renamed to their names.
        var folders: [URL] = []
        for (i, item) in items.enumerated() where placed[i] == nil {
            let done = placement == .replacing
                ? rename(item.temporary.path, item.destination.path) == 0
                : csystem_rename_noreplace(item.temporary.path, item.destination.path) == 0
            if done {
                placed[i] = .renamed(identities[i])
                let folder = item.destination.deletingLastPathComponent()
                if !folders.contains(folder) { folders.append(folder) }
            } else {
                placed[i] = errno == EEXIST && placement == .neverReplacing ? .exists : .failed(.rename(FileIO.errnoText()))
            }
        }
        // What is left of a temporary is this writer's own: removed.
        for (i, item) in items.enumerated() where placed[i].map({ if case .renamed = $0 { false } else { true } }) ?? true {
            unlink(item.temporary.path)
        }
        // 4. One fsync per folder makes every rename into it durable.
        var folderFailure: String?
        for folder in folders where syncFolder {
            do { try syncDirectory(folder) } catch { folderFailure = folderFailure ?? "\(error)" }
        }
        return Group(files: placed.map { $0 ?? .failed(.write("not written")) }, folderFailure: folderFailure)
    }

    /// Writes one file (see the type's comment); throws what failed, naming the file or its folder.
    /// A folder's failed fsync leaves the file at its name, not known to be durable.
    /// `syncFolder: false` is for a file that must only never be read half-written (a metrics
    /// file, a control request the spool's own folder fsync covers): the rename may be lost in a
    /// crash, the file's bytes never.
    func write(_ bytes: [UInt8], to destination: URL, temporary: URL, mode: mode_t,
               placement: Placement = .replacing, syncFolder: Bool = true) throws(FileIO.Failure) {
        let group = write([Item(bytes: bytes, temporary: temporary, destination: destination)], mode: mode, placement: placement,
                          syncFolder: syncFolder)
        let folder = destination.deletingLastPathComponent().lastPathComponent
        switch group.files[0] {
        case .renamed:
            if let why = group.folderFailure { throw FileIO.Failure(description: why) }
        case .exists:
            throw FileIO.Failure(description: "\(destination.lastPathComponent) already exists in \(folder)/")
        case .failed(.write(let why)):
            throw FileIO.Failure(description: "cannot write \(destination.lastPathComponent): \(why)")
        case .failed(.rename(let why)):
            throw FileIO.Failure(description: "rename into \(folder)/: \(why)")
        }
    }
}
