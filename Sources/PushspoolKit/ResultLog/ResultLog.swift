import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The result log of one job, `results/<job-id>.jsonl` (README "Result log"): a `job` line, one
/// `delivery` line per target as it reaches a final outcome, a `summary` line.
///
/// Each line is written to the file as it is appended, before the target's slot is given to
/// the next one: once a request has been answered, its line is in the kernel, so a crash (kill -9)
/// resends only the requests that were in flight. `close` fsyncs before the job may move to
/// `done/` (the durability a power loss needs). The open file carries an exclusive advisory lock:
/// it marks the job as owned by a live dispatcher, so a second dispatcher never resumes a job that
/// is still running, while a crashed one's lock vanishes with it.
public final class ResultLog: OutcomeLog {
    public let url: URL
    private struct State {
        var fd: Int32
        /// Set once a write failed (a full disk): nothing more is written, senders stop.
        var failure: String?
    }
    private let state: Mutex<State>
    /// Whether `failure` is set: asked before every target, so an atomic load, not the lock the
    /// writer holds through its `write(2)`.
    private let failed = Atomic<Bool>(false)

    public enum OpenError: Error { case busy, io(String) }

    /// Opens (creating) the log for appending and takes its lock; `.busy` if another live
    /// dispatcher holds it. A torn last line from a crash is cut off first.
    public init(url: URL) throws(OpenError) {
        self.url = url
        let fd = open(url.path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o640)   // never write through a planted symlink
        guard fd >= 0 else { throw .io(String(cString: strerror(errno))) }
        if !FileIO.tryLockExclusive(fd) {
            FileIO.closeDescriptor(fd)
            throw .busy
        }
        Self.truncateTornTail(fd)
        lseek(fd, 0, SEEK_END)
        state = Mutex(State(fd: fd))
    }

    deinit { state.withLock { FileIO.closeDescriptor($0.fd) } }

    /// Appends one record (encoded outside the lock, appended under it once).
    public func append(_ record: ResultRecord) { append(line: record.line()) }

    /// Appends one encoded line (ending in a newline): one write(2), under the lock so lines
    /// never interleave. A failure (full disk) is remembered and reported by `close`.
    public func append(line bytes: [UInt8]) {
        state.withLock { s in
            guard s.failure == nil else { return }
            do {
                try FileIO.writeAll(s.fd, bytes)
            } catch {
                s.failure = "\(error)"
                failed.store(true, ordering: .releasing)
            }
        }
    }

    /// The file's size: where the next line goes.
    public var size: Int64 {
        state.withLock { s in
            var st = stat()
            return fstat(s.fd, &st) == 0 ? Int64(st.st_size) : 0
        }
    }

    /// Why lines could not be written (a full disk), once that happened; senders stop then.
    public var failure: String? {
        guard failed.load(ordering: .acquiring) else { return nil }
        return state.withLock { $0.failure }
    }

    /// Puts the log back if someone deleted it (or its folder) while the job runs: the open file
    /// still holds every line, so they are copied to a new file at the log's path, which is then
    /// written to and locked instead. Without this, a job would finish reporting its deliveries
    /// with its record gone, and a re-drop with the same id would send them all again.
    /// The outcome recorder, which writes the log, calls it after its writes (at most once a
    /// second), and `close` once more. Returns what happened, for the job's log; nil when the
    /// file is where it should be.
    @discardableResult
    public func restoreIfDeleted() -> String? {
        state.withLock { s -> String? in
            var open = stat(), named = stat()
            guard fstat(s.fd, &open) == 0 else { return nil }
            if stat(url.path, &named) == 0, named.st_ino == open.st_ino, named.st_dev == open.st_dev { return nil }
            let folder = url.deletingLastPathComponent().path
            mkdir(folder, 0o750)
            let fresh = Foundation.open(url.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o640)
            guard fresh >= 0 else {
                s.failure = "result log \(url.lastPathComponent) was deleted and cannot be recreated: \(FileIO.errnoText())"
                failed.store(true, ordering: .releasing)
                return s.failure
            }
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var offset: off_t = 0
            while true {
                let n = buffer.withUnsafeMutableBytes { pread(s.fd, $0.baseAddress, $0.count, offset) }
                if n <= 0 { break }
                do { try FileIO.writeAll(fresh, Array(buffer[0..<n])) } catch {
                    s.failure = "result log \(url.lastPathComponent) was deleted; restoring it failed: \(error)"
                    failed.store(true, ordering: .releasing)
                    FileIO.closeDescriptor(fresh)
                    return s.failure
                }
                offset += off_t(n)
            }
            _ = flock(fresh, LOCK_EX | LOCK_NB)
            FileIO.closeDescriptor(s.fd)
            s.fd = fresh
            return "result log \(url.lastPathComponent) was deleted while the job ran; restored from the open file (\(offset) bytes)"
        }
    }

    /// Fsyncs and releases the lock. Throws if any line could not be written: the caller then
    /// leaves the job in `active/` so that nothing is lost.
    public func close() throws(FileIO.Failure) {
        restoreIfDeleted()
        let (fd, failure) = state.withLock { ($0.fd, $0.failure) }
        if let failure { throw FileIO.Failure(description: "result log \(url.lastPathComponent): \(failure)") }
        if fsync(fd) != 0 { throw FileIO.Failure(description: "fsync \(url.lastPathComponent): \(FileIO.errnoText())") }
        _ = flock(fd, LOCK_UN)
    }

    private static func truncateTornTail(_ fd: Int32) {
        let size = lseek(fd, 0, SEEK_END)
        guard size > 0 else { return }
        var pos = size
        var byte: UInt8 = 0
        // Walk back to the last newline; everything after it is a line torn by a crash.
        while pos > 0 {
            guard pread(fd, &byte, 1, pos - 1) == 1 else { return }
            if byte == 0x0A { break }
            pos -= 1
        }
        if pos != size { _ = ftruncate(fd, pos) }
    }
}

/// Where a run's outcome lines go: a job's result log, or (a chunk sent for the shared queue)
/// the queue's outcome rows (`ChunkOutcomeLog`).
protocol OutcomeLog: Sendable {
    /// Appends encoded lines (each ending in a newline); a failure is kept in `failure`.
    func append(line bytes: [UInt8])
    /// Why lines could not be written; senders stop then.
    var failure: String? { get }
    /// Bytes written so far: where the next line goes.
    var size: Int64 { get }
    /// Puts a deleted log back from what is open; what was done, to be logged (nil: nothing).
    func restoreIfDeleted() -> String?
    /// Appends a batch of delivery lines whose outcomes `counted` sums up (its `offset`: their
    /// bytes): a log that keeps counts takes them from there, not from the lines.
    func append(outcomes bytes: [UInt8], counted: LogPosition)
}

extension OutcomeLog {
    func append(_ record: ResultRecord) { append(line: record.line()) }

    func append(outcomes bytes: [UInt8], counted: LogPosition) { append(line: bytes) }
}
