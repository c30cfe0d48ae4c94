import CSQLite
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `pushspool registry backup FILE`: a copy of a live SQLite registry through SQLite's online
/// backup API (`sqlite3_backup_init/step/finish`), never a copy of its file, which a writer may
/// be changing (and whose last commits may still be in `-wal` beside it).
///
/// Consistency: the copy is read inside one read transaction on the source, so every page comes
/// from one snapshot — every transaction committed when it began, none committed after. The
/// registry is in WAL mode, so that open reader blocks no writer: `run`, `serve` and an import
/// keep committing while it is copied (their commits go to the WAL; the backup restarts for
/// none of them, since its snapshot does not move). Only a checkpoint cannot recycle the WAL
/// until the copy ends. Pages are copied a batch at a time; a batch that finds the source or the
/// copy locked (a checkpoint, WAL recovery after a crash) waits in SQLite's own busy handler
/// (`sqlite3_busy_timeout`), which takes the lock as soon as it is free, for up to the
/// registry's busy timeout.
///
/// The copy is written under a temporary name beside FILE, checked with `integrity_check`, then
/// renamed over FILE and its folder fsynced: FILE is an older complete backup or the new one,
/// never half a copy. Mode 0600, as the registry (it holds device handles).
public enum SQLiteBackup {
    public struct Report: Sendable, Equatable {
        /// Devices in the copy.
        public var devices: Int
        /// The copy's size and pages.
        public var bytes: Int64
        public var pages: Int
    }

    /// Pages copied per step: 1,024 pages of 16 KiB, 16 MiB a step.
    static let pagesPerStep: Int32 = 1024
    /// How long a locked source or copy is waited for, in all (the registry's busy timeout).
    static let busyLimit: TimeInterval = 30

    public static func backup(registry path: String, to destination: String) throws(RegistryError) -> Report {
        guard FileManager.default.fileExists(atPath: path) else {
            throw RegistryError("no registry at \(path)")
        }
        let target = URL(fileURLWithPath: destination)
        if path == target.path || (try? FileManager.default.destinationOfSymbolicLink(atPath: destination)) == path {
            throw RegistryError("the backup cannot be the registry itself (\(destination))")
        }
        let temporary = DurableFile.temporary(for: target)
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw RegistryError("cannot create \(temporary.path): \(FileIO.errnoText())") }
        close(fd)
        var renamed = false
        defer {
            if !renamed {
                for suffix in ["", "-journal", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: temporary.path + suffix) }
            }
        }
        let report = try copy(from: path, to: temporary.path)
        guard rename(temporary.path, destination) == 0 else {
            throw RegistryError("cannot rename the backup to \(destination): \(FileIO.errnoText())")
        }
        renamed = true
        do { try FileIO.syncDirectory(target.deletingLastPathComponent()) } catch {
            throw RegistryError("backup \(destination) written, but its folder could not be synced: \(error)")
        }
        return report
    }

    /// Copies the registry at `path` into the (empty) database file at `copyPath` and checks it.
    static func copy(from path: String, to copyPath: String) throws(RegistryError) -> Report {
        let source = try SQLiteDatabase(path: path, create: false)
        defer { source.close() }
        let copy = try SQLiteDatabase(path: copyPath, create: false)
        defer { copy.close() }
        // A lock another connection holds is waited for by SQLite's busy handler, inside each
        // step (`sqlite3_backup_step` calls it for the source and the copy alike).
        let busyMS = Int32(busyLimit * 1000)
        guard let from = source.db, let to = copy.db, sqlite3_busy_timeout(from, busyMS) == SQLITE_OK,
              sqlite3_busy_timeout(to, busyMS) == SQLITE_OK else {
            throw RegistryError("cannot start the backup: \(copy.errorMessage)")
        }
        // The snapshot: a read transaction the backup's steps run inside (they open none of their own).
        try source.execute("BEGIN; SELECT count(*) FROM sqlite_schema")
        defer { try? source.execute("COMMIT") }
        guard let backup = sqlite3_backup_init(to, "main", from, "main") else {
            throw RegistryError("cannot start the backup: \(copy.errorMessage)")
        }
        // SQLITE_BUSY here means the busy handler waited `busyLimit` already; SQLITE_LOCKED
        // cannot come (it means the source connection writes, and this one is this function's
        // own, inside a read transaction). Either ends the copy, as any other error does.
        var rc: Int32 = SQLITE_OK
        repeat { rc = sqlite3_backup_step(backup, pagesPerStep) } while rc == SQLITE_OK
        let pages = Int(sqlite3_backup_pagecount(backup))
        let finished = sqlite3_backup_finish(backup)
        guard rc == SQLITE_DONE, finished == SQLITE_OK else {
            throw RegistryError(sqlite: "backup stopped: \(copy.errorMessage)", rc: rc == SQLITE_DONE ? finished : rc)
        }
        // The copy is checked as a restore would open it.
        let check = try copy.statement("PRAGMA integrity_check")
        var problems: [String] = []
        while try check.step() { problems.append(check.text(0)) }
        check.reset()
        guard problems == ["ok"] else {
            throw RegistryError("the copy failed its integrity check: \(problems.prefix(3).joined(separator: "; "))")
        }
        let devices: Int
        let hasDevices = try copy.statement("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'devices'")
        _ = try hasDevices.step()
        if hasDevices.int64(0) > 0 {
            hasDevices.reset()
            let count = try copy.statement("SELECT count(*) FROM devices")
            _ = try count.step()
            devices = Int(count.int64(0))
            count.reset()
        } else {
            hasDevices.reset()
            devices = 0
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: copyPath)[.size] as? NSNumber)?.int64Value ?? 0
        return Report(devices: devices, bytes: size, pages: pages)
    }
}
