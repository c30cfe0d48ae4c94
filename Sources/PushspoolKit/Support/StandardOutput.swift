import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything a command prints on stdout goes through here, so that output that could not be
/// written is never reported as success: `devices > /dev/full` must not look like a backup.
///
/// - Lines collect in a 64 KiB buffer and leave with one write(2) per buffer (a million-device
///   `devices` is a few hundred writes, not a million); `lineBuffered` (`run`, `serve`) writes
///   each line at once so reports reach journald or a log file as jobs finish.
/// - The first write error is kept; `finish` turns it into `pushspool: cannot write output:
///   <strerror>` and exit 74. Later output is dropped rather than retried.
/// - A reader that went away (EPIPE: `devices | head -1`) ends the process as SIGPIPE ends
///   `ls | head`: quietly. `run` and `serve` ignore SIGPIPE (a pipe they write may lose its
///   reader), so the signal is raised here with its default action rather than relied upon.
public final class StandardOutput: Sendable {
    public static let shared = StandardOutput(fd: 1)

    static let capacity = 64 * 1024

    private struct State {
        var buffer: [UInt8] = []
        var lineBuffered = false
        /// errno of the first failed write.
        var failure: Int32?
    }

    private let fd: Int32
    private let state = Mutex(State())

    init(fd: Int32) {
        self.fd = fd
        state.withLock { $0.buffer.reserveCapacity(Self.capacity) }
    }

    /// A closed stdout (`pushspool devices >&-`) would be handed to the next file the process
    /// opens (the registry!), and the listing written into it. Put /dev/null on descriptor 1 so
    /// nothing else can take it, and remember that output is impossible (EBADF), as a write to
    /// the closed descriptor would have said.
    public static func guardClosedDescriptors() {
        for descriptor: Int32 in [0, 1, 2] where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            let null = open("/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY)
            if null >= 0 && null != descriptor {
                _ = dup2(null, descriptor)
                _ = close(null)
            }
            if descriptor == 1 { shared.state.withLock { $0.failure = EBADF } }
        }
    }

    /// Each line written at once (long-running commands whose stdout is a log).
    public func setLineBuffered(_ on: Bool) {
        state.withLock { $0.lineBuffered = on }
    }

    /// `text` and a newline, as `print` would.
    public func line(_ text: String) {
        write(text + "\n")
    }

    public func write(_ text: String) {
        state.withLock { s in
            guard s.failure == nil else { return }
            s.buffer.append(contentsOf: text.utf8)
            if s.lineBuffered || s.buffer.count >= Self.capacity { drain(&s) }
        }
    }

    /// Bytes already encoded (a JSON line), without a trip through String.
    public func write(bytes: [UInt8]) {
        state.withLock { s in
            guard s.failure == nil else { return }
            s.buffer.append(contentsOf: bytes)
            if s.lineBuffered || s.buffer.count >= Self.capacity { drain(&s) }
        }
    }

    /// Writes what is buffered; the errno of the first failure so far, if any.
    @discardableResult
    public func flush() -> Int32? {
        state.withLock { s in
            drain(&s)
            return s.failure
        }
    }

    /// At exit: flush, and if any output was lost say so (stderr) and return exit 74.
    public func finish() -> ExitCode? {
        guard let failure = flush() else { return nil }
        FileHandle.standardError.write(Data("pushspool: cannot write output: \(String(cString: strerror(failure)))\n".utf8))
        return .ioError
    }

    private func drain(_ s: inout State) {
        defer { s.buffer.removeAll(keepingCapacity: true) }
        guard s.failure == nil else { return }
        var offset = 0
        while offset < s.buffer.count {
            let n = s.buffer.withUnsafeBytes { systemWrite(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n > 0 { offset += n; continue }
            if n < 0 && errno == EINTR { continue }
            let code = n < 0 ? errno : EIO
            if code == EPIPE { Self.endQuietly() }
            s.failure = code
            return
        }
    }

    /// The reader is gone: end as `ls | head` does, by SIGPIPE, with nothing on stderr.
    private static func endQuietly() -> Never {
        signal(SIGPIPE, SIG_DFL)
        raise(SIGPIPE)
        _exit(141)
    }
}

/// write(2), named apart from `StandardOutput.write`.
private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(fd, bytes, count)
    #else
    Darwin.write(fd, bytes, count)
    #endif
}
