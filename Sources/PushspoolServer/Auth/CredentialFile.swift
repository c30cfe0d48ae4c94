import PushspoolKit
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the front door's credential files (users, tokens, TLS key). A file that others on the
/// machine can read is refused: password hashes can be guessed offline, and a token digest or
/// a TLS key is worth protecting in the same way.
enum CredentialFile {
    struct Problem: Error, CustomStringConvertible, Sendable {
        var description: String
        /// The file is not there at all (as opposed to unreadable or refused).
        var missing = false
    }

    struct Contents: Sendable {
        var bytes: [UInt8]
        var version: FileIO.Version
    }

    /// The file's bytes and version (from the descriptor it was read through), or one line
    /// naming `key` and the path that says what is wrong and how to fix it.
    static func read(_ url: URL, key: String, limit: Int = 16 << 20) throws(Problem) -> Contents {
        let path = url.path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let missing = errno == ENOENT
            let why = missing ? "does not exist" : "cannot be read: \(String(cString: strerror(errno)))"
            throw Problem(description: "\(key): \(path) \(why)", missing: missing)
        }
        defer { FileIO.closeDescriptor(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw Problem(description: "\(key): \(path) cannot be read: \(String(cString: strerror(errno)))") }
        guard st.st_mode & S_IFMT == S_IFREG else { throw Problem(description: "\(key): \(path) is not a regular file") }
        if st.st_mode & 0o004 != 0 {
            throw Problem(description: "\(key): \(path) is readable by others (mode \(String(st.st_mode & 0o777, radix: 8))); fix: chmod o-r \(path)")
        }
        let bytes: [UInt8]
        do { bytes = try FileIO.readAll(fd: fd, limit: limit) } catch {
            throw Problem(description: "\(key): \(path) cannot be read: \(error)")
        }
        #if canImport(Darwin)
        let t = st.st_mtimespec
        #else
        let t = st.st_mtim
        #endif
        let version = FileIO.Version(inode: UInt64(st.st_ino), size: Int64(st.st_size),
                                     modified: Double(t.tv_sec) + Double(t.tv_nsec) / 1e9)
        return Contents(bytes: bytes, version: version)
    }

    /// The lines of a text file with their 1-based numbers, a trailing `\r` dropped (files
    /// edited on Windows). Split as bytes: in a String, `\r\n` is one Character, not a `\n`.
    static func lines(_ bytes: [UInt8]) -> [(number: Int, text: String)] {
        bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated().map { i, line in
            (i + 1, String(decoding: line.last == UInt8(ascii: "\r") ? line.dropLast() : line, as: UTF8.self))
        }
    }
}
