import Foundation
import PushspoolCore
import PushspoolHTTP

/// Posts journalled events to their webhooks: at most `maxInFlight` at once, each webhook's
/// events of one job in the order made (the next waits until the one before is delivered or
/// given up), different jobs interleaved. A 2xx delivers; anything else (or no answer) is retried
/// with the house `RetryPolicy` (exponential backoff with full jitter, `Retry-After` honoured)
/// until `giveUpAfter` seconds after the event was made, then kept in `webhooks/failed/`.
///
/// Memory is bounded: at most `window` entries (and about `windowBytes` of bodies) are held;
/// the rest wait in their journal files (`WebhookBacklog`) and are read, oldest first, as
/// entries are delivered or given up. A receiver down for a day with a million events pending
/// costs the files on disk, not the events in memory. Reading files in the order written keeps
/// each (webhook, job)'s events in order; the cost is that a window full of one job's events
/// waiting for a retry holds the later files until one of them is delivered or given up.
///
/// The waiting is the spool outbox's (`SpoolOutbox`, shared with the hub queue): its thread
/// posts what is ready, sleeps until the earliest retry is due, and reads from disk as room is made.
final class WebhookDelivery: @unchecked Sendable {
    struct Hook: Sendable {
        var url: String
        var secret: String
    }

    private struct Item {
        var file: String
        var entry: WebhookJournal.Entry
        var attempts = 0
    }

    private let hooks: [Hook]
    private let client: any HTTPClient
    private let journal: () -> WebhookJournal?
    private let metrics: WebhookMetrics
    private let policy: RetryPolicy
    private let giveUpAfter: Double
    private let random: @Sendable () -> Double
    private let now: @Sendable () -> Double
    private let log: Log
    /// Which (webhook, job) may post now, the retries' due times, and the thread that waits for them.
    private let outbox: SpoolOutbox<String>
    var maxInFlight: Int { outbox.maxInFlight }

    /// Guards what follows (never held while calling `outbox`).
    private let lock = NSLock()
    /// Each (webhook, job)'s events in order; the head is the one being sent or waiting.
    private var queues: [String: [Item]] = [:]
    /// Lines not yet delivered or given up, per journal file.
    private var remaining: [String: Int] = [:]
    /// Entries held in `queues`, and their bodies' bytes.
    private var held = 0, heldBytes = 0
    let window: Int, windowBytes: Int
    /// Journal files with entries still on disk only, in the order they are read.
    private var backlog: WebhookBacklog?
    private var onDisk = 0
    /// Files not yet read to their end: not removed while their last entries are unread.
    private var reading: Set<String> = []
    /// Lines for webhooks no longer configured, not yet said.
    private var dropped = 0

    init(hooks: [Hook], client: any HTTPClient, journal: @escaping () -> WebhookJournal?, metrics: WebhookMetrics, log: Log,
         policy: RetryPolicy = RetryPolicy(maxAttempts: Int.max, baseDelay: 1, maxDelay: 3600),
         giveUpAfter: Double = 24 * 3600, maxInFlight: Int = 64, window: Int = 4096, windowBytes: Int = 8 << 20,
         random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
         now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.hooks = hooks
        self.client = client
        self.journal = journal
        self.metrics = metrics
        self.log = log
        self.policy = policy
        self.giveUpAfter = giveUpAfter
        self.window = max(1, window)
        self.windowBytes = windowBytes
        self.random = random
        self.now = now
        outbox = SpoolOutbox(name: "pushspool-webhooks", maxInFlight: maxInFlight, now: now)
    }

    func start() {
        // The outbox holds these (and so this) until its thread ends at `stop`.
        outbox.start(send: { [self] key in post(key) }, refill: { [self] in refillFromDisk() })
    }

    /// Takes the entries of journal file `file`, just written: into memory when the window has
    /// room and no older file waits on disk, else left in the file to be read in turn.
    func add(file: String, _ entries: [WebhookJournal.Entry]) {
        var started: [String] = []
        lock.lock()
        metrics.pending.add(entries.count)
        let fits = onDisk == 0 && held + entries.count <= window
            && heldBytes + entries.reduce(0, { $0 + $1.body.count }) <= windowBytes
        if fits {
            for e in entries { if let key = hold(file: file, e) { started.append(key) } }
        } else {
            queueOnDisk(file)
        }
        lock.unlock()
        for key in started { outbox.ready(key) }
        if !fits { outbox.wake() }
    }

    /// A file an earlier run left in `pending/`, holding `lines` entries: read in turn.
    func addOnDisk(file: String, lines: Int) {
        lock.lock()
        metrics.pending.add(lines)
        queueOnDisk(file)
        lock.unlock()
        outbox.wake()
    }

    /// Under `lock`.
    private func queueOnDisk(_ file: String) {
        if backlog == nil, let dir = journal()?.pendingDir { backlog = WebhookBacklog(directory: dir) }
        backlog?.add(file)
        onDisk += 1
        reading.insert(file)
    }

    /// Under `lock`: one entry into its (webhook, job)'s queue; its key when that queue was
    /// empty (the caller tells the outbox it is ready, once the lock is let go).
    private func hold(file: String, _ e: WebhookJournal.Entry) -> String? {
        remaining[file, default: 0] += 1
        held += 1
        heldBytes += e.body.count
        let key = "\(e.hook)\u{0}\(e.order)"
        let first = queues[key, default: []].isEmpty
        queues[key, default: []].append(Item(file: file, entry: e))
        return first ? key : nil
    }

    /// Entries held in memory now (at most `window`).
    var heldCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return held
    }

    /// Under `lock`: whether entries on disk may be read into the window now.
    private var mayRead: Bool { onDisk > 0 && held < window && heldBytes < windowBytes }

    /// On the outbox's thread, before each turn: reads what the window has room for from the
    /// files on disk.
    private func refillFromDisk() {
        lock.lock()
        guard mayRead else { return lock.unlock() }
        guard let backlog, let journal = journal() else {
            // No journal, no files (only a delivery made without one: tests of the posting alone).
            onDisk = 0
            return lock.unlock()
        }
        let room = window - held, roomBytes = windowBytes - heldBytes
        lock.unlock()
        let taken = backlog.read(entries: room, bytes: roomBytes)
        let lines = taken.entries.map { ($0.file, journal.parse($0.line)) }
        lock.lock()
        var skipped = 0, started: [String] = []
        for (file, line) in lines {
            switch line {
            case .entry(let e): if let key = hold(file: file, e) { started.append(key) }
            case .otherHook: dropped += 1; skipped += 1
            case .unreadable: skipped += 1
            }
        }
        metrics.pending.add(-skipped)
        var done: [String] = []
        for file in taken.ended {
            onDisk -= 1
            reading.remove(file)
            if remaining[file] == nil { done.append(file) }
        }
        let told = dropped, more = mayRead
        dropped = 0
        lock.unlock()
        for key in started { outbox.ready(key) }
        if more { outbox.wake() }
        for file in done { journal.remove(file) }
        if told > 0 { log.warning("\(told) webhook event(s) in webhooks/pending/ are for a webhook no longer configured: not sent") }
    }

    /// Waits up to `timeout` seconds until nothing is in flight or ready to send (events waiting
    /// for a retry are left to the next run): `run --once` delivers what it made before it exits.
    func drain(timeout: Double) {
        outbox.drain(timeout: timeout) { [self] in
            lock.lock()
            defer { lock.unlock() }
            return mayRead
        }
    }

    /// Stops posting (what is in flight is left to finish or to the next run).
    func stop() { outbox.stop() }

    /// On the outbox's thread: posts the head of `key`'s queue.
    private func post(_ key: String) {
        lock.lock()
        let head = queues[key]?.first
        lock.unlock()
        guard let item = head else { return outbox.finished(key) }
        let hook = hooks[item.entry.hook]
        let signature = WebhookSignature.value(secret: hook.secret, body: item.entry.body, at: Int(now()))
        let request = HTTPRequest(method: "POST", url: hook.url,
                                  headers: [("Content-Type", "application/json"), ("User-Agent", "pushspool"),
                                            (WebhookSignature.header, signature)],
                                  body: item.entry.body, timeout: 30, responseHeaders: ["retry-after"])
        client.execute(request) { [self] result in finished(key, item, result) }
    }

    private func finished(_ key: String, _ item: Item, _ result: Result<HTTPResponse, HTTPTransportError>) {
        var retryAfter: Double?
        let outcome: String
        switch result {
        case .success(let r) where (200..<300).contains(r.status):
            done(key, item, delivered: true)
            return
        case .success(let r):
            retryAfter = r[header: "retry-after"].flatMap { RetryAfter.seconds($0) }
            outcome = "HTTP \(r.status)"
        case .failure(let e):
            outcome = e.message
        }
        let attempt = item.attempts + 1
        if now() - item.entry.created >= giveUpAfter {
            log.warning("webhook event to \(hostOf(item.entry.hook)) given up after \(attempt) attempt(s) over 24 h (last: \(outcome)); kept in webhooks/failed/")
            done(key, item, delivered: false)
            return
        }
        metrics.retries.add(1)
        let delay: Double
        switch policy.decide(.retry(after: retryAfter), attempt: attempt, random: random) {
        case .retry(let after): delay = after
        default: delay = policy.maxDelay
        }
        lock.lock()
        if var q = queues[key], !q.isEmpty {
            q[0].attempts = attempt
            queues[key] = q
        }
        lock.unlock()
        outbox.retry(key, at: now() + delay)
        if attempt == 1 || attempt % 10 == 0 {
            log.info("webhook event to \(hostOf(item.entry.hook)) not delivered (\(outcome)); attempt \(attempt + 1) in \(Int(delay.rounded(.up))) s")
        }
    }

    private func done(_ key: String, _ item: Item, delivered: Bool) {
        if !delivered { journal()?.keepFailed(item.entry, file: item.file) }
        lock.lock()
        var more = false
        if var q = queues[key], !q.isEmpty {
            q.removeFirst()
            more = !q.isEmpty
            queues[key] = more ? q : nil
        }
        held -= 1
        heldBytes -= item.entry.body.count
        let left = (remaining[item.file] ?? 1) - 1
        remaining[item.file] = left > 0 ? left : nil
        let finished = left <= 0 && !reading.contains(item.file)
        lock.unlock()
        // The next event of this (webhook, job) goes once this one is done; the window's room
        // lets the outbox read more from disk.
        if more { outbox.ready(key) }
        outbox.finished(key)
        if finished { journal()?.remove(item.file) }
        metrics.pending.add(-1)
        if delivered { metrics.delivered.add(1) } else { metrics.failed.add(1) }
    }

    private func hostOf(_ hook: Int) -> String {
        WebhookConfig.parts(hooks[hook].url)?.host ?? "webhook \(hook)"
    }
}
