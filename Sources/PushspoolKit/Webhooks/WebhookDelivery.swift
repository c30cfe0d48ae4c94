import Foundation
import PushspoolCore
import PushspoolHTTP

/// Posts journalled events to their webhooks: at most `maxInFlight` at once, each webhook's
/// events of one job in the order made (the next waits until the one before is delivered or
/// given up), different jobs interleaved. A 2xx delivers; anything else (or no answer) is retried
/// with the house `RetryPolicy` (exponential backoff with full jitter, `Retry-After` honoured)
/// until `giveUpAfter` seconds after the event was made, then kept in `webhooks/failed/`.
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
    let maxInFlight: Int

    private let cond = NSCondition()
    /// Each (webhook, job)'s events in order; the head is the one being sent or waiting.
    private var queues: [String: [Item]] = [:]
    /// Keys whose head may be sent now, in the order they became ready.
    private var ready: [String] = []
    private var readyHead = 0
    /// Keys whose head waits for a retry, with when.
    private var waiting: [(due: Double, key: String)] = []
    /// Lines not yet delivered or given up, per journal file.
    private var remaining: [String: Int] = [:]
    private var inFlight = 0
    private var stopping = false
    private var thread: Thread?

    init(hooks: [Hook], client: any HTTPClient, journal: @escaping () -> WebhookJournal?, metrics: WebhookMetrics, log: Log,
         policy: RetryPolicy = RetryPolicy(maxAttempts: Int.max, baseDelay: 1, maxDelay: 3600),
         giveUpAfter: Double = 24 * 3600, maxInFlight: Int = 64,
         random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
         now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.hooks = hooks
        self.client = client
        self.journal = journal
        self.metrics = metrics
        self.log = log
        self.policy = policy
        self.giveUpAfter = giveUpAfter
        self.maxInFlight = maxInFlight
        self.random = random
        self.now = now
    }

    func start() {
        let t = Thread { [self] in run() }
        t.name = "pushspool-webhooks"
        thread = t
        t.start()
    }

    /// Takes the entries of journal file `file` (just written, or left by an earlier run).
    func add(file: String, _ entries: [WebhookJournal.Entry]) {
        cond.lock()
        remaining[file, default: 0] += entries.count
        for e in entries {
            let key = "\(e.hook)\u{0}\(e.order)"
            if queues[key, default: []].isEmpty { ready.append(key) }
            queues[key, default: []].append(Item(file: file, entry: e))
        }
        metrics.pending.add(entries.count)
        cond.broadcast()
        cond.unlock()
    }

    /// Waits up to `timeout` seconds until nothing is in flight or ready to send (events waiting
    /// for a retry are left to the next run): `run --once` delivers what it made before it exits.
    func drain(timeout: Double) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        cond.lock()
        while (inFlight > 0 || ready[readyHead...].contains(where: { queues[$0] != nil })) && Date() < deadline {
            _ = cond.wait(until: deadline)
        }
        cond.unlock()
    }

    /// Stops posting (what is in flight is left to finish or to the next run).
    func stop() {
        cond.lock()
        stopping = true
        cond.broadcast()
        cond.unlock()
    }

    private func run() {
        cond.lock()
        while !stopping {
            let t = now()
            if !waiting.isEmpty {
                waiting.sort { $0.due < $1.due }
                while let first = waiting.first, first.due <= t {
                    waiting.removeFirst()
                    ready.append(first.key)
                }
            }
            var starts: [(String, Item)] = []
            while inFlight < maxInFlight, readyHead < ready.count {
                let key = ready[readyHead]
                readyHead += 1
                guard let item = queues[key]?.first else { continue }
                inFlight += 1
                starts.append((key, item))
            }
            if readyHead > 4096, readyHead * 2 > ready.count {
                ready.removeFirst(readyHead)
                readyHead = 0
            }
            if !starts.isEmpty {
                cond.unlock()
                for (key, item) in starts { post(key, item) }
                cond.lock()
                continue
            }
            if let due = waiting.map(\.due).min() {
                _ = cond.wait(until: Date(timeIntervalSince1970: max(due, t + 0.001)))
            } else {
                cond.wait()
            }
        }
        cond.unlock()
    }

    private func post(_ key: String, _ item: Item) {
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
        cond.lock()
        if var q = queues[key], !q.isEmpty {
            q[0].attempts = attempt
            queues[key] = q
        }
        inFlight -= 1
        waiting.append((now() + delay, key))
        cond.broadcast()
        cond.unlock()
        if attempt == 1 || attempt % 10 == 0 {
            log.info("webhook event to \(hostOf(item.entry.hook)) not delivered (\(outcome)); attempt \(attempt + 1) in \(Int(delay.rounded(.up))) s")
        }
    }

    private func done(_ key: String, _ item: Item, delivered: Bool) {
        if !delivered { journal()?.keepFailed(item.entry, file: item.file) }
        cond.lock()
        if var q = queues[key], !q.isEmpty {
            q.removeFirst()
            if q.isEmpty { queues[key] = nil } else { queues[key] = q; ready.append(key) }
        }
        inFlight -= 1
        let left = (remaining[item.file] ?? 1) - 1
        remaining[item.file] = left > 0 ? left : nil
        cond.broadcast()
        cond.unlock()
        if left <= 0 { journal()?.remove(item.file) }
        metrics.pending.add(-1)
        if delivered { metrics.delivered.add(1) } else { metrics.failed.add(1) }
    }

    private func hostOf(_ hook: Int) -> String {
        WebhookConfig.parts(hooks[hook].url)?.host ?? "webhook \(hook)"
    }
}
