import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reads a file line by line in 64 KiB chunks (a longer line grows the buffer), so importing a million registrations does not
/// hold the whole file in memory. Lines are numbered from 1; a trailing `\r` is dropped.
final class LineReader: @unchecked Sendable {   // used by one thread at a time
    private let fd: Int32
    private var buffer: UnsafeMutablePointer<UInt8>
    private var capacity = 1 << 16
    private var start = 0
    private var end = 0
    private var eof = false
    private var number = 0

    init(url: URL) throws {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw RegistryError(String(cString: strerror(errno)))
        }
        var st = stat()
        if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR {
            Glibc.close(fd)
            throw RegistryError("is a directory")
        }
        self.fd = fd
        buffer = .allocate(capacity: capacity)
    }

    deinit {
        buffer.deallocate()
    }

    private var closed = false
    func close() {
        if !closed { Glibc.close(fd); closed = true }
    }

    func next() throws -> (Int, [UInt8])? {
        try withNextLine { number, line in (number, Array(line)) }
    }

    /// Calls `body` with the next line's number and bytes (valid during the call only); nil at the end.
    func withNextLine<R>(_ body: (Int, UnsafeBufferPointer<UInt8>) throws -> R) throws -> R? {
        while true {
            if start < end, let nl = memchr(buffer + start, 0x0A, end - start) {
                let lineEnd = UnsafeMutablePointer<UInt8>(nl.assumingMemoryBound(to: UInt8.self)) - buffer
                let lineStart = start
                start = lineEnd + 1
                return try emit(lineStart, lineEnd, body)
            }
            if eof {
                guard start < end else { return nil }
                let lineStart = start
                start = end
                return try emit(lineStart, end, body)
            }
            // Keep the partial line, make room, read more.
            if start > 0 {
                if end > start { memmove(buffer, buffer + start, end - start) }
                end -= start
                start = 0
            }
            if end == capacity {
                let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity * 2)
                bigger.update(from: buffer, count: end)
                buffer.deallocate()
                buffer = bigger
                capacity *= 2
            }
            let n = read(fd, buffer + end, capacity - end)
            if n < 0 {
                if errno == EINTR { continue }
                throw RegistryError(String(cString: strerror(errno)))
            }
            if n == 0 { eof = true } else { end += n }
        }
    }

    private func emit<R>(_ from: Int, _ to: Int, _ body: (Int, UnsafeBufferPointer<UInt8>) throws -> R) throws -> R {
        var to = to
        if to > from, buffer[to - 1] == 0x0D { to -= 1 }
        number += 1
        return try body(number, UnsafeBufferPointer(start: buffer + from, count: to - from))
    }
}
