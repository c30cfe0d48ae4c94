import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open, locked job file in `active/`: a dispatcher's hold on a job while it runs.
///
/// The lock (flock on the file itself, taken right after the claim) tells a live owner from a
/// crashed one: another dispatcher's orphan scan cannot take a job that is running, and the lock
/// dies with a killed process. The file is opened without following symlinks and without
/// blocking, and only regular files are jobs: a symlink could make pushspool read any file the
/// dispatcher can, and a FIFO would block it for ever.
final class JobFile {
    enum OpenError: Error, Equatable {
        /// Gone before we got it: another dispatcher finished or moved it.
        case gone
        /// Another live dispatcher holds it.
        case busy
        /// Not a regular file (what it is instead): quarantined, never read.
        case notRegular(String)
        case io(String)
    }

    private var fd: Int32
    private let device: UInt64
    private let inode: UInt64

    init(path: String) throws(OpenError) {
        let (fd, st) = try Self.openRegular(path)
        if !FileIO.tryLockExclusive(fd) {
            FileIO.closeDescriptor(fd)
            throw .busy
        }
        self.fd = fd
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }

    deinit { release() }

    /// Drops the lock (after the job has moved on).
    func release() {
        if fd >= 0 { FileIO.closeDescriptor(fd) }
        fd = -1
    }

    func read(limit: Int = 16 << 20) throws(OpenError) -> [UInt8] {
        do { return try FileIO.readAll(fd: fd, limit: limit) } catch { throw .io(error.description) }
    }

    /// Whether `path` still names this file (not a newer job of the same name, not gone).
    func isAt(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode
    }

    /// Whether a live dispatcher holds the file at `path` (bytes: any name the file system has).
    static func isHeld(_ path: [CChar]) -> Bool {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { FileIO.closeDescriptor(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK
    }

    static func isHeld(_ path: String) -> Bool { isHeld(path.utf8CString.map { $0 }) }

    /// Reads a job file that nobody needs to lock yet (a `not_before` peek in `incoming/`,
    /// `status`): nil when it is gone, not a regular file, or unreadable.
    static func peek(_ path: String, limit: Int = 16 << 20) -> [UInt8]? {
        guard let (fd, _) = try? openRegular(path) else { return nil }
        defer { FileIO.closeDescriptor(fd) }
        return try? FileIO.readAll(fd: fd, limit: limit)
    }

    private static func openRegular(_ path: String) throws(OpenError) -> (Int32, stat) {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            switch errno {
            case ENOENT: throw .gone
            case ELOOP: throw .notRegular("a symbolic link")
            default: throw .io(String(cString: strerror(errno)))
            }
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            FileIO.closeDescriptor(fd)
            throw .io(String(cString: strerror(errno)))
        }
        let kind = st.st_mode & S_IFMT
        guard kind == S_IFREG else {
            FileIO.closeDescriptor(fd)
            throw .notRegular(kind == S_IFDIR ? "a directory" : kind == S_IFIFO ? "a FIFO" : kind == S_IFLNK ? "a symbolic link" : "not a regular file")
        }
        return (fd, st)
    }
}
