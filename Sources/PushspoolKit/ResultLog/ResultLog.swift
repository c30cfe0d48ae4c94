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
public final class ResultLog: Sendable {
    public let url: URL
    private struct State {
        var fd: Int32
        /// Set once a write failed (a full disk): nothing more is written, senders stop.
        var failure: String?
    }
    private let state: Mutex<State>

    public enum OpenError: Error { case busy, io(String) }

    /// Opens (creating) the log for appending and takes its lock; `.busy` if another live
    /// dispatcher holds it. A torn last line from a crash is cut off first.
    public init(url: URL) throws(OpenError) {
        self.url = url
        let fd = open(url.path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o640)   // never write through a planted symlink
        guard fd >= 0 else { throw .io(String(cString: strerror(errno))) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            FileIO.closeDescriptor(fd)
            throw .busy
        }
        Self.truncateTornTail(fd)
        lseek(fd, 0, SEEK_END)
        state = Mutex(State(fd: fd))
    }

    deinit { state.withLock { FileIO.closeDescriptor($0.fd) } }

    /// Appends one JSON line.
    public func append(_ line: JSONValue) {
        // Encoded outside the lock, appended under it once.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        line.write(into: &bytes)
        bytes.append(0x0A)
        append(line: bytes)
    }

    /// Appends one encoded line (ending in a newline): one write(2), under the lock so lines
    /// never interleave. A failure (full disk) is remembered and reported by `close`.
    public func append(line bytes: [UInt8]) {
        state.withLock { s in
            guard s.failure == nil else { return }
            do {
                try FileIO.writeAll(s.fd, bytes)
            } catch {
                s.failure = "\(error)"
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
    public var failure: String? { state.withLock { $0.failure } }

    /// Puts the log back if someone deleted it (or its folder) while the job runs: the open file
    /// still holds every line, so they are copied to a new file at the log's path, which is then
    /// written to and locked instead. Without this, a job would finish reporting its deliveries
    /// with its record gone, and a re-drop with the same id would send them all again.
    /// Returns what happened, for the job's log; nil when the file is where it should be.
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
                return s.failure
            }
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var offset: off_t = 0
            while true {
                let n = buffer.withUnsafeMutableBytes { pread(s.fd, $0.baseAddress, $0.count, offset) }
                if n <= 0 { break }
                do { try FileIO.writeAll(fresh, Array(buffer[0..<n])) } catch {
                    s.failure = "result log \(url.lastPathComponent) was deleted; restoring it failed: \(error)"
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

/// What an existing result log already records (for resuming after a crash and for duplicates).
public struct ResultLogContents: Sendable {
    public var hasJobLine = false
    /// From the job line: the job file's name and the targets planned.
    public var file: String?
    public var targets: Int?
    public var summaryStatus: String?
    public var summaryError: String?
    /// Every target already final (a resume skips them).
    public var finished = FinishedTargets()
    public var delivered = 0, failed = 0, unregistered = 0, retries = 0

    public init() {}

    /// The point this was read from (nil: the whole log was read).
    public var resumedFrom: ResumePoint?

    /// Reads a log line by line (bounded memory per line); torn or foreign lines are skipped.
    /// With a resume point that fits the file, only the job line, the point's tails (for their
    /// targets) and what follows the point's offset are read; the counts before it are the
    /// point's. Otherwise the whole log.
    public static func read(_ url: URL, from point: ResumePoint? = nil) -> ResultLogContents? {
        guard let handle = FileHandle(forReadingAtPath: url.path) else { return nil }
        defer { try? handle.close() }
        var c = ResultLogContents()
        if let point, fits(point, handle) {
            c.resumedFrom = point
            // The job line is the log's first.
            c.scan(handle, from: 0, to: nil, firstLineOnly: true, count: false)
            for tail in point.tails { c.scan(handle, from: tail.lowerBound, to: tail.upperBound, count: false) }
            c.delivered = point.log.delivered
            c.failed = point.log.failed
            c.unregistered = point.log.unregistered
            c.retries = point.log.retries
            c.scan(handle, from: point.log.offset, to: nil, count: true)
        } else {
            c.scan(handle, from: 0, to: nil, count: true)
        }
        c.finished.seal()
        return c
    }

    /// Every offset the point names is inside the file and at a line's start.
    private static func fits(_ point: ResumePoint, _ handle: FileHandle) -> Bool {
        guard let size = try? handle.seekToEnd() else { return false }
        func lineStart(_ offset: Int64) -> Bool {
            guard offset > 0 else { return offset == 0 }
            guard offset <= Int64(size), (try? handle.seek(toOffset: UInt64(offset - 1))) != nil,
                  let byte = try? handle.read(upToCount: 1) else { return false }
            return byte.first == 0x0A
        }
        return point.after >= 0 && lineStart(point.log.offset) && point.tails.allSatisfy { lineStart($0.lowerBound) && lineStart($0.upperBound) }
    }

    /// Absorbs the whole lines between two offsets (`to` nil: the end); `count`: add their
    /// deliveries to the counts (a tail's are in the point's counts already).
    private mutating func scan(_ handle: FileHandle, from: Int64, to: Int64?, firstLineOnly: Bool = false, count: Bool) {
        guard (try? handle.seek(toOffset: UInt64(from))) != nil else { return }
        var left = to.map { $0 - from } ?? Int64.max
        var pending: [UInt8] = []
        while left > 0, let chunk = try? handle.read(upToCount: Int(min(left, 1 << 20))), !chunk.isEmpty {
            left -= Int64(chunk.count)
            pending.append(contentsOf: chunk)
            var start = 0
            while let nl = pending[start...].firstIndex(of: 0x0A) {
                absorb(Array(pending[start..<nl]), count: count)
                start = nl + 1
                if firstLineOnly { return }
            }
            pending.removeFirst(start)
        }
    }

    mutating func absorb(_ line: [UInt8], count: Bool = true) {
        guard let v = try? JSONParser.parse(line), let type = v["type"]?.stringValue else { return }
        switch type {
        case "job":
            hasJobLine = true
            file = v["file"]?.stringValue
            if case .int(let n)? = v["targets"] { targets = Int(n) }
        case "summary":
            summaryStatus = v["status"]?.stringValue
            summaryError = v["error"]?.stringValue
        case "delivery":
            guard let platform = v["platform"]?.stringValue else { return }
            if let device = v["device"]?.stringValue {
                finished.insert(platform: platform, device: device)
            } else {
                finished.insert(platform: platform, hubTags: v["tags"]?.stringValue ?? "")
            }
            guard count else { return }
            switch v["status"]?.stringValue {
            case "delivered": delivered += 1
            case "unregistered": unregistered += 1
            default: failed += 1
            }
            if case .int(let a) = v["attempts"] ?? .null, a > 1 { retries += Int(a) - 1 }
        default: return
        }
    }
}

/// The targets a result log records as final, in 16 bytes each: two independent 64-bit hashes of
/// (platform, device id or hub tags), kept sorted. A resumed 1M-device job holds 16 MB here where
/// a set of `platform|device` strings held about 70 MB. Two seeded 64-bit hashes make a false
/// match (a target skipped that was never sent) about 1 in 10^25 for a million targets; the seeds
/// are the process's own, so nothing about them is ever stored.
public struct FinishedTargets: Sendable {
    private struct Print: Comparable, Hashable {
        var a: UInt64, b: UInt64
        static func < (l: Print, r: Print) -> Bool { (l.a, l.b) < (r.a, r.b) }
    }
    private var prints: [Print] = []
    private var sealed = true

    public init() {}

    /// Distinct targets (once sealed).
    public var count: Int { prints.count }

    mutating func insert(platform: String, device: String) { add(Self.print(platform, 0, device)) }
    mutating func insert(platform: String, hubTags: String) { add(Self.print(platform, 1, hubTags)) }

    /// Sorts and drops repeats; `contains` needs it (reading a log ends with it).
    mutating func seal() {
        guard !sealed else { return }
        prints.sort()
        var out = 0
        for i in prints.indices where i == 0 || prints[i] != prints[out - 1] {
            prints[out] = prints[i]
            out += 1
        }
        prints.removeLast(prints.count - out)
        prints.shrinkToFit()
        sealed = true
    }

    public func contains(platform: Platform, recipient: Recipient) -> Bool {
        precondition(sealed, "FinishedTargets read before seal()")
        if prints.isEmpty { return false }          // a job's first run: no hashing per target
        let p = switch recipient {
        case .device(let d): Self.print(platform.rawValue, 0, d.id)
        case .hub(let audience): Self.print(platform.rawValue, 1, audience.hubTags ?? "")
        }
        var lo = 0, hi = prints.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if prints[mid] < p { lo = mid + 1 } else { hi = mid }
        }
        return lo < prints.count && prints[lo] == p
    }

    private mutating func add(_ p: Print) {
        prints.append(p)
        sealed = false
    }

    private static func print(_ platform: String, _ kind: UInt8, _ who: String) -> Print {
        func hash(_ seed: UInt64) -> UInt64 {
            var h = Hasher()
            h.combine(seed)
            h.combine(platform)
            h.combine(kind)
            h.combine(who)
            return UInt64(bitPattern: Int64(h.finalize()))
        }
        return Print(a: hash(0x7075_7368), b: hash(0x7370_6F6F))
    }
}

extension Array {
    fileprivate mutating func shrinkToFit() {
        guard capacity > count + count / 8 else { return }
        self = Array(self[...])
    }
}
