import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The spool's `webhooks/` folder: events waiting to be delivered (`pending/`) and the ones given
/// up after 24 hours (`failed/`), one JSON line per delivery (an event to one webhook).
///
/// Events are written in batches, not a file each: `append` adds to a buffer that one writer
/// thread turns into a file (`tmp/` → fsync → rename into `pending/` → fsync of the folder), so
/// a flood of small jobs pays an fsync per batch of jobs finishing together, not per job.
/// `durable: true` waits until the entries are on disk (`job.finished` before its job leaves
/// `active/`, `device.unregistered` before its devices leave the registry); every caller waits,
/// so the buffer holds at most one batch per job ending or pruning at once. The send path itself
/// never calls this: outcomes reach the pruner's queue, which does. A file is removed once every line in it was delivered or given
/// up; after a crash every line of the files left is delivered again (receivers dedup by `id`).
/// The files are the queue: the delivery holds a bounded window of their entries in memory and
/// reads the rest from here as it makes room (`WebhookBacklog`).
public final class WebhookJournal: @unchecked Sendable {
    struct Entry: Sendable {
        /// Index into the configured webhooks.
        var hook: Int
        var order: String
        /// Unix seconds when the event was made: the 24 hours run from here.
        var created: Double
        var body: [UInt8]
    }

    /// `webhooks/`: `pending/`, `failed/`, and `tmp/` for the batches being written.
    let folder: OutboxFolder
    var pendingDir: URL { folder.pending }
    /// A stable name per webhook (a digest of its URL, never the secret): entries name it, so a
    /// restart with webhooks reordered still finds each entry's webhook.
    let hookKeys: [String]
    private let cond = NSCondition()
    private var buffer: [Entry] = []
    private var ticket = 0, written = 0, failure: String?
    private var stopping = false, done = false
    private var sequence = 0
    private let log: Log
    /// Called on the writer thread with each file written and its entries.
    private let onWritten: @Sendable (String, [Entry]) -> Void
    private var thread: Thread?

    init(spoolRoot: URL, hookKeys: [String], log: Log, onWritten: @escaping @Sendable (String, [Entry]) -> Void) throws {
        let root = spoolRoot.appendingPathComponent("webhooks")
        folder = try OutboxFolder(root: root, temporaries: root.appendingPathComponent("tmp"), keepsFailed: true, permissions: 0o750)
        self.hookKeys = hookKeys
        self.log = log
        self.onWritten = onWritten
    }

    func start() {
        let t = Thread { [self] in run() }
        t.name = "pushspool-webhooks-journal"
        thread = t
        t.start()
    }

    /// Adds `entries`; with `durable`, returns once they are on disk, or throws why they could
    /// not be written (a full disk: the caller keeps its job in `active/`).
    func append(_ entries: [Entry], durable: Bool) throws {
        guard !entries.isEmpty else { return }
        cond.lock()
        defer { cond.unlock() }
        buffer += entries
        ticket += 1
        let mine = ticket
        cond.broadcast()
        guard durable else { return }
        while written < mine && !done {
            if let failure { throw WebhookJournalError(message: failure) }
            cond.wait()
        }
        if written < mine { throw WebhookJournalError(message: "webhook events not written: stopping") }
    }

    /// Writes what is buffered and stops the writer thread.
    func stop() {
        cond.lock()
        defer { cond.unlock() }
        stopping = true
        cond.broadcast()
        while thread != nil && !done { cond.wait() }
    }

    private func run() {
        cond.lock()
        while true {
            while buffer.isEmpty && !stopping { cond.wait() }
            if buffer.isEmpty && stopping { break }
            let batch = buffer, upTo = ticket
            buffer.removeAll(keepingCapacity: true)
            cond.unlock()
            let name = nextName()
            var bytes: [UInt8] = []
            bytes.reserveCapacity(batch.reduce(0) { $0 + $1.body.count + 120 })
            for e in batch { line(e, into: &bytes) }
            var problem: String?
            do {
                try folder.write(bytes, name: name, mode: 0o640)
            } catch {
                problem = "cannot write webhook events to \(pendingDir.path): \(error)"
            }
            cond.lock()
            if let problem, stopping {
                // Stopping with a disk that takes nothing: a job whose job.finished this was
                // stayed in active/ (its wait failed) and makes it again when it resumes.
                failure = problem
                cond.broadcast()
                log.error("\(problem); \(batch.count + buffer.count) webhook event(s) not written")
                buffer.removeAll()
                continue
            }
            if let problem {
                // Kept for the next turn; whoever waits learns why.
                buffer.insert(contentsOf: batch, at: 0)
                failure = problem
                cond.broadcast()
                cond.unlock()
                log.error(problem)
                cond.lock()
                // Again in a moment, or at once when a stop asks for a last try.
                let again = Date().addingTimeInterval(0.2)
                while !stopping, Date() < again { _ = cond.wait(until: again) }
                continue
            }
            failure = nil
            written = upTo
            cond.broadcast()
            cond.unlock()
            onWritten(name, batch)
            cond.lock()
        }
        done = true
        cond.broadcast()
        cond.unlock()
    }

    private func nextName() -> String {
        sequence += 1
        let ms = Int(Date().timeIntervalSince1970 * 1000)
        return String(format: "%013d-%d-%08d.jsonl", ms, Int(getpid()), sequence)
    }

    private func line(_ e: Entry, into bytes: inout [UInt8]) {
        var w = JSONLineWriter(continuing: bytes)
        bytes = []
        w.field("hook", hookKeys[e.hook])
        w.field("order", e.order)
        w.field("created", Int(e.created * 1000))
        w.field("body", String(decoding: e.body, as: UTF8.self))
        bytes = w.line()
    }

    /// The files left in `pending/` (a run that stopped or crashed), oldest first, with how many
    /// lines each holds (counted as they stream by: nothing is kept). Their entries are read
    /// later, as the delivery makes room (`WebhookBacklog`); an empty file is removed.
    func pendingFiles() -> [(name: String, lines: Int)] {
        let names = folder.names(suffix: ".jsonl")
        var out: [(String, Int)] = []
        for name in names {
            let lines = Self.lineCount(folder.url(name))
            if lines == 0 { remove(name) } else { out.append((name, lines)) }
        }
        return out
    }

    /// What one journal line holds.
    enum Line {
        case entry(Entry)
        /// For a webhook no longer configured: not sent.
        case otherHook
        /// Not a journal line (a torn write before the rename cannot leave one; a hand edit can).
        case unreadable
    }

    func parse(_ line: [UInt8]) -> Line {
        guard case .object(let pairs)? = try? JSONParser.parse(line),
              let key = pairs.first(where: { $0.0 == "hook" })?.1.stringValue,
              let order = pairs.first(where: { $0.0 == "order" })?.1.stringValue,
              case .int(let created)? = pairs.first(where: { $0.0 == "created" })?.1,
              let body = pairs.first(where: { $0.0 == "body" })?.1.stringValue else { return .unreadable }
        guard let hook = hookKeys.firstIndex(of: key) else { return .otherHook }
        return .entry(Entry(hook: hook, order: order, created: Double(created) / 1000, body: Array(body.utf8)))
    }

    /// Lines in a file (non-empty ones end in a newline: a journal file is written whole), read
    /// 64 KiB at a time.
    static func lineCount(_ url: URL) -> Int {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var lines = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return lines }
            for i in 0..<n where buffer[i] == 10 { lines += 1 }
        }
    }

    /// Every line of file `name` was delivered or given up.
    func remove(_ name: String) { folder.remove(name) }

    /// An entry given up after its 24 hours: kept in `failed/<name>` (fsynced) for the operator.
    func keepFailed(_ e: Entry, file name: String) {
        var bytes: [UInt8] = []
        line(e, into: &bytes)
        do { try folder.keepFailed(bytes, name: name, mode: 0o640) } catch { log.error("cannot keep a failed webhook event in \(error)") }
    }

    /// Lines in `pending/` and in `failed/` of a spool (for `status`, from any process).
    public static func counts(spoolRoot: URL) -> (pending: Int, failed: Int) {
        func lines(_ dir: URL) -> Int {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
            return names.filter { $0.hasSuffix(".jsonl") }.reduce(0) { $0 + lineCount(dir.appendingPathComponent($1)) }
        }
        let root = spoolRoot.appendingPathComponent("webhooks")
        return (lines(root.appendingPathComponent("pending")), lines(root.appendingPathComponent("failed")))
    }
}

struct WebhookJournalError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
