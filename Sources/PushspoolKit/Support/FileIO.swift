import Foundation
import CSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Small POSIX file helpers with real error reporting (full disks must surface, not vanish).
public enum FileIO {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// `close(2)`, callable where a type's own `close()` method shadows it.
    public static func closeDescriptor(_ fd: Int32) { _ = close(fd) }

    /// Modification time in seconds since 1970 (nanosecond precision), nil if `path` is gone.
    public static func modificationTime(_ path: String) -> Double? { version(path)?.modified }

    /// Which version of a file is at `path`: its inode, size and modification time. A file
    /// replaced by another with the same mtime (`cp -p`, then a rename) is still told apart.
    public struct Version: Equatable, Sendable {
        public var inode: UInt64, size: Int64
        public var modified: Double
        package init(inode: UInt64, size: Int64, modified: Double) {
            self.inode = inode
            self.size = size
            self.modified = modified
        }
    }

    public static func version(_ path: String) -> Version? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        #if canImport(Darwin)
        let t = st.st_mtimespec
        #else
        let t = st.st_mtim
        #endif
        return Version(inode: UInt64(st.st_ino), size: Int64(st.st_size), modified: Double(t.tv_sec) + Double(t.tv_nsec) / 1e9)
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }

    /// Gives the heap's free pages back to the system (glibc keeps them after a burst of
    /// allocations, so a long-running process's RSS would stay at its peak).
    static func trimHeap() {
        csystem_trim_heap()
    }

    /// Takes the exclusive lock a dispatcher holds on a job file and on a result log, without
    /// waiting; false when another process holds it.
    static func tryLockExclusive(_ fd: Int32) -> Bool {
        flock(fd, LOCK_EX | LOCK_NB) == 0
    }

    /// Writes `bytes` to a new file at `url` and fsyncs it before closing.
    public static func writeDurably(_ bytes: [UInt8], to url: URL, mode: mode_t) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure(description: errnoText()) }
        defer { close(fd) }
        try writeAll(fd, bytes)
        guard fsync(fd) == 0 else { throw Failure(description: "fsync: \(errnoText())") }
    }

    /// Fsyncs a folder, so that a rename into it survives a power loss.
    public static func syncDirectory(_ url: URL) throws {
        let fd = open(url.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: errnoText()) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure(description: "fsync \(url.lastPathComponent)/: \(errnoText())") }
    }

    /// Writes every byte or throws (ENOSPC, EIO…).
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(description: errnoText())
            }
            offset += n
        }
    }

    /// Why `url` cannot be read, for a message after "cannot read <path>: ": a file that is not
    /// there is told apart from one this user may not read (the fixes differ: copy it there,
    /// or chown/chmod it).
    public static func whyUnreadable(_ url: URL) -> String {
        if access(url.path, F_OK) != 0 {
            return errno == ENOENT ? "no such file" : errnoText()
        }
        if access(url.path, R_OK) != 0 {
            let code = errno   // before getpwuid, which may change it
            let who = getpwuid(geteuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? "uid \(geteuid())"
            return code == EACCES ? "permission denied for user \(who) (chown or chmod it so that \(who) may read it)" : String(cString: strerror(code))
        }
        var st = stat()
        if stat(url.path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR { return "it is a folder" }
        return "not readable as text"
    }

    public static func readAll(_ url: URL, limit: Int = 16 << 20) throws -> [UInt8] {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: errnoText()) }
        defer { close(fd) }
        return try readAll(fd: fd, limit: limit)
    }

    /// Reads an open file from its start to its end.
    public static func readAll(fd: Int32, limit: Int = 16 << 20) throws(Failure) -> [UInt8] {
        var offset: off_t = 0
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if n < 0 { if errno == EINTR { continue }; throw Failure(description: errnoText()) }
            if n == 0 { break }
            offset += off_t(n)
            out.append(contentsOf: buf[0..<n])
            if out.count > limit { throw Failure(description: "file is larger than \(limit) bytes") }
        }
        return out
    }
}
