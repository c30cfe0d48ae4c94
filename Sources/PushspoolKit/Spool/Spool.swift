import CSystem
import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The spool directory: Maildir/Postfix-style queue folders where every state change is an atomic
/// rename within one filesystem (README "Dropping jobs").
///
///     tmp/ ──writer renames──▶ incoming/ ──claim──▶ active/ ──complete──▶ done/
///                                                        └──quarantine──▶ failed/
///
/// Only `*.json` names not starting with `.` are jobs. Warnings (a job vanished under us, a name
/// collision) are handled here; fatal problems (the root is unreadable or world-writable) throw.
public final class Spool: Sendable {
    public enum Folder: String, CaseIterable, Sendable {
        case tmp, incoming, active, done, failed, results, outbox
        /// Operators' requests about a job by id: `<id>.cancel`, `<id>.pause`.
        case control
    }

    public let root: URL

    /// Opens the spool at `root`, creating missing folders without world access. Refuses a spool
    /// that anyone may write to, as Postfix does for its queue: its permissions are its access control.
    /// `create: false` refuses a folder that is not a spool yet (no `incoming/`); a spool that has
    /// `incoming/` gets any other missing folder back.
    public init(root: URL, create: Bool = true) throws(SpoolError) {
        self.root = root.standardizedFileURL
        let fm = FileManager.default
        // Before "is there a spool": a folder this user cannot search looks missing.
        if let denied = SpoolAccess.problem(root: self.root) { throw SpoolError(denied, kind: .denied) }
        if !create, !fm.fileExists(atPath: self.root.appendingPathComponent(Folder.incoming.rawValue).path) {
            throw SpoolError("no spool at \(self.root.path)", kind: .missing)
        }
        do {
            try fm.createDirectory(at: self.root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o750])
            for folder in Folder.allCases {
                let url = self.root.appendingPathComponent(folder.rawValue)
                if !fm.fileExists(atPath: url.path) {
                    // Writers (other services in the spool's group) need tmp/ and incoming/, and
                    // operators steering jobs control/.
                    let mode = [.tmp, .incoming, .control].contains(folder) ? 0o770 : 0o750
                    try fm.createDirectory(at: url, withIntermediateDirectories: false, attributes: [.posixPermissions: mode])
                }
            }
            try fm.createDirectory(at: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw SpoolError("cannot create spool folders under \(self.root.path): \(error.localizedDescription)")
        }
        // Every folder, not only the ones writers use: a world-writable results/ would let anyone
        // plant a symlink where a result log is about to be written.
        for path in [self.root.path, stateDirectory.path] + Folder.allCases.map({ url($0).path }) {
            var st = stat()
            guard lstat(path, &st) == 0 else { throw SpoolError("cannot read \(path): \(String(cString: strerror(errno)))") }
            guard st.st_mode & S_IFMT == S_IFDIR else { throw SpoolError("refusing to use \(path): it is not a directory", kind: .refused) }
            if st.st_mode & 0o002 != 0 {
                throw SpoolError("refusing to use \(path): it is world-writable (chmod o-w it; the spool's permissions decide who may drop jobs)", kind: .refused)
            }
        }
        // Cached credentials are for pushspool alone, whatever an earlier umask or chmod did.
        chmod(stateDirectory.path, 0o700)
    }

    /// Refuses (kind `denied`) when this user may not write to one of `folders`.
    public func checkWritable(_ folders: [Folder]) throws(SpoolError) {
        if let denied = SpoolAccess.problem(root: root, writing: folders) { throw SpoolError(denied, kind: .denied) }
    }

    public func url(_ folder: Folder) -> URL { root.appendingPathComponent(folder.rawValue) }
    public func url(_ folder: Folder, _ name: String) -> URL { url(folder).appendingPathComponent(name) }
    public var stateDirectory: URL { root.appendingPathComponent(".state") }

    public static func isJobName(_ name: String) -> Bool {
        !name.hasPrefix(".") && name.hasSuffix(".json") && name.count > 5
    }

    /// Job file names in `folder`, oldest first (by modification time, then name). Names that
    /// are not valid UTF-8 or hold control characters are never listed: see `unsafeJobNames`.
    public func jobs(in folder: Folder) -> [String] {
        let dir = url(folder)
        guard let names = SpoolName.list(dir.path) else { return [] }
        let jobs = names.compactMap(\.text).filter(Self.isJobName)
        let dated = jobs.map { ($0, FileIO.modificationTime(dir.appendingPathComponent($0).path) ?? 0) }
        return dated.sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }.map(\.0)
    }

    /// How many jobs wait in `folder`: names only, no file is read or dated (a flood of a
    /// million files is counted in a fraction of a second; `jobs(in:)` would sort them all).
    public func count(_ folder: Folder) -> Int {
        FolderScan(url(folder).path, limit: 0, dated: false)?.jobs ?? 0
    }

    /// Claims `incoming/<name>` by renaming it into `active/`. Returns false when another
    /// dispatcher was faster (the file is gone) or an active job already has that name.
    public func claim(_ name: String) -> Bool {
        csystem_rename_noreplace(url(.incoming, name).path, url(.active, name).path) == 0
    }

    /// `active/<name>` → `done/`: every target reached a final outcome.
    @discardableResult
    public func complete(_ name: String, as newName: String? = nil) -> String? { move(name, from: .active, to: .done, as: newName) }

    /// `active/<name>` → `failed/`: the job could not be processed; its result log says why.
    @discardableResult
    public func quarantine(_ name: String) -> String? { move(name, from: .active, to: .failed) }

    /// Renames within the spool without ever replacing a file: on a collision the name gets a
    /// numeric suffix. Returns the final name, nil when the source vanished.
    func move(_ name: String, from: Folder, to: Folder, as newName: String? = nil) -> String? {
        move(path: Array(url(from, name).path.utf8CString), to: to, as: newName ?? name)
    }

    private func move(path source: [CChar], to folder: Folder, as name: String) -> String? {
        let stem = String(name.dropLast(5))
        for n in 0..<1000 {
            let target = n == 0 ? "\(stem).json" : "\(stem).\(n).json"
            if csystem_rename_noreplace(source, url(folder, target).path) == 0 { return target }
            if errno != EEXIST { return nil }
        }
        return nil
    }

    /// Would-be jobs in `folder` (`*.json`, not starting with a dot) whose names are not valid
    /// UTF-8 or hold control characters: they are never run, but quarantined by the dispatcher.
    func unsafeJobNames(in folder: Folder) -> [SpoolName] {
        (SpoolName.list(url(folder).path) ?? []).filter { $0.looksLikeJob && $0.text == nil }
    }

    /// Renames such a file from `folder` straight to `failed/` under its safe name (never
    /// replacing a file). Returns that name; nil when it vanished (another dispatcher took it).
    func quarantine(_ unsafe: SpoolName, from folder: Folder) -> String? {
        move(path: unsafe.path(in: url(folder).path), to: .failed, as: unsafe.safeName)
    }

    /// Renames `results/<id>.jsonl` to `results/<id>.<label>-<unix time>[.n].jsonl`, never
    /// replacing a file. False when it could not be moved (it is then still in the way).
    public func setAsideResultLog(of id: String, as label: String) -> Bool {
        let from = resultURL(jobID: id).path
        let stem = "\(firstGivenID(id)).\(label)-\(Int(Date().timeIntervalSince1970))"
        for n in 0..<1000 {
            let to = url(.results, n == 0 ? "\(stem).jsonl" : "\(stem).\(n).jsonl").path
            if csystem_rename_noreplace(from, to) == 0 { return true }
            if errno == ENOENT { return true }
            if errno != EEXIST { return false }
        }
        return false
    }

    /// A new, locked result log: `results/<id>.jsonl` if no file has that name, else
    /// `results/<id>.invalid-<unix time>[.n].jsonl`. Created exclusively: never someone else's log.
    func createResultLog(preferring id: String) -> ResultLog? {
        let stem = "\(id).invalid-\(Int(Date().timeIntervalSince1970))"
        for n in -1..<1000 {
            let url = n < 0 ? resultURL(jobID: id) : self.url(.results, n == 0 ? "\(stem).jsonl" : "\(stem).\(n).jsonl")
            let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o640)
            if fd < 0 {
                if errno == EEXIST { continue }
                return nil
            }
            FileIO.closeDescriptor(fd)
            return try? ResultLog(url: url)
        }
        return nil
    }

    /// Removes regular files in `tmp/` last changed before `cutoff` (writers' leftovers: a
    /// crashed writer, a full disk). Returns how many were removed, and the oldest modification
    /// time of those younger than `cutoff` (when the next is due).
    public func removeTemporaries(olderThan cutoff: Date) -> (removed: Int, oldestKept: Date?) {
        let dir = url(.tmp).path
        var removed = 0
        var oldestKept: Double?
        for name in SpoolName.list(dir) ?? [] {
            let path = name.path(in: dir)
            var st = stat()
            guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { continue }
            let modified = Double(st.st_mtim.tv_sec)
            if modified < cutoff.timeIntervalSince1970 {
                if unlink(path) == 0 { removed += 1 }
            } else {
                oldestKept = min(oldestKept ?? modified, modified)
            }
        }
        return (removed, oldestKept.map(Date.init(timeIntervalSince1970:)))
    }

    /// Writes a job atomically and durably, through the one drop every door uses
    /// (`JobIntake.Drop`): `tmp/` (fsynced) renamed to `incoming/<name>`, then `incoming/`
    /// fsynced. Fails rather than replacing a job of the same name, and a failure leaves nothing.
    public func submit(_ bytes: [UInt8], name: String) throws(SpoolError) {
        switch JobIntake.Drop(spool: self).write([(bytes, name)])[0] {
        case .queued: return
        case .exists: throw SpoolError("cannot move \(name) into incoming/: a job named \(name) is already waiting")
        case .failed(let why): throw SpoolError("cannot submit \(name): \(why)")
        }
    }
}

public struct SpoolError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// There is no spool there at all (as opposed to one that cannot be used).
        case missing
        /// The spool is there but unsafe to use (world-writable, not a directory): configuration.
        case refused
        /// The spool is there but this user may not read or write it (EX_NOPERM).
        case denied
        /// Reading or writing failed.
        case io
    }
    public var kind: Kind
    public var description: String

    public init(_ message: String, kind: Kind = .io) {
        description = message
        self.kind = kind
    }
}
