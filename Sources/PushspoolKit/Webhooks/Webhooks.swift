import Foundation
import PushspoolCore
import PushspoolHTTP

/// The configured `webhooks` of one dispatcher (README "Webhooks"): events are made on the
/// engine's paths (`jobFinished` as a job ends, `devicesUnregistered` as the pruner removes
/// devices a service reported gone), written to the spool's `webhooks/` before they are due
/// (`WebhookJournal`), and posted, signed, by `WebhookDelivery` on its own thread over the
/// providers' HTTP/1.1 client (TLS verified, no redirects, non-public addresses refused unless
/// the URL names a loopback address or the webhook sets `private_addresses`).
public final class Webhooks: Sendable {
    let hooks: [WebhookConfig]
    private let journal: WebhookJournal
    private let delivery: WebhookDelivery
    private let client: any HTTPClient
    private let metrics: WebhookMetrics
    private let spoolRoot: URL

    /// Nil when the config has no webhooks.
    public convenience init?(config: Config, spool: Spool, metrics: WebhookMetrics, log: Log) throws {
        guard !config.webhooks.isEmpty else { return nil }
        // The CA file as the providers' clients have it (one reading and check of it).
        let (caPEM, problem) = EngineSetup.extraCA(config)
        if let problem { throw FileIO.Failure(description: problem) }
        try self.init(hooks: config.webhooks, spoolRoot: spool.root, caPEM: caPEM, metrics: metrics, log: log)
    }

    init(hooks: [WebhookConfig], spoolRoot: URL, caPEM: String?, metrics: WebhookMetrics, log: Log,
         giveUpAfter: Double = 24 * 3600) throws {
        self.hooks = hooks
        self.metrics = metrics
        self.spoolRoot = spoolRoot
        var options = HTTPClientOptions(extraCAPEM: caPEM, versions: .http1)
        options.maxConnectionsPerHost = 8
        options.plainHTTPToLoopback = true
        options.addressGuard = Self.addressGuard(hooks)
        client = try HTTPClients.make(options)
        let box = JournalBox()
        delivery = WebhookDelivery(hooks: hooks.map { .init(url: $0.url, secret: $0.secret.value) }, client: client,
                                   journal: { box.journal }, metrics: metrics, log: log, giveUpAfter: giveUpAfter)
        let delivery = delivery
        journal = try WebhookJournal(spoolRoot: spoolRoot, hookKeys: hooks.map { Self.key($0.url) }, log: log) { file, entries in
            delivery.add(file: file, entries)
        }
        box.journal = journal
        metrics.enabled.store(true, ordering: .relaxed)
    }

    /// The connect-time check: every address a webhook's host resolves to must be public, unless
    /// the URL names a loopback address itself or the webhook sets `private_addresses`.
    static func addressGuard(_ hooks: [WebhookConfig]) -> AddressGuard {
        let exempt = Set(hooks.compactMap { h -> String? in
            guard let p = WebhookConfig.parts(h.url) else { return nil }
            return h.privateAddresses || WebhookConfig.isLoopback(p.host) ? p.host : nil
        })
        return AddressGuard { host in exempt.contains(host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))) }
    }

    /// A webhook's name in the journal: a digest of its URL.
    static func key(_ url: String) -> String { WebhookSignature.hex(Array(SHA256.digest(Array(url.utf8)).prefix(8))) }

    /// Hands what earlier runs left in `webhooks/pending/` to delivery, then starts posting.
    public func start() {
        metrics.failed.store(WebhookJournal.counts(spoolRoot: spoolRoot).failed, ordering: .relaxed)
        for (file, lines) in journal.pendingFiles() { delivery.addOnDisk(file: file, lines: lines) }
        journal.start()
        delivery.start()
    }

    /// Writes what is buffered, gives what is ready to send up to 5 seconds to be delivered,
    /// stops posting and closes the connections. Undelivered events stay in `webhooks/pending/`
    /// for the next run.
    public func shutdown() {
        journal.stop()
        delivery.drain(timeout: 5)
        delivery.stop()
        client.shutdown()
    }

    /// `job.finished` for job `jobID`, on disk when this returns (or it throws why not).
    func jobFinished(summary: [UInt8], jobID: String, apps: [String]) throws {
        try write([WebhookEvent.jobFinished(summary: summary, jobID: jobID, apps: apps)])
    }

    /// `device.unregistered` events (per app, up to 1,000 devices each), on disk when this returns.
    func devicesUnregistered(_ devices: [WebhookEvent.GoneDevice], jobID: String) throws {
        var byApp: [String: [WebhookEvent.GoneDevice]] = [:]
        for d in devices { byApp[d.app, default: []].append(d) }
        try write(byApp.keys.sorted().flatMap { WebhookEvent.devicesUnregistered(byApp[$0]!, jobID: jobID, app: $0) })
    }

    /// Whether some webhook takes `event` at all (the paths skip making events no one gets).
    func wants(_ event: WebhookConfig.Event) -> Bool { hooks.contains { $0.events.contains(event) } }

    private func write(_ events: [WebhookEvent]) throws {
        var entries: [WebhookJournal.Entry] = []
        for event in events {
            let body = event.body
            for (i, hook) in hooks.enumerated() where hook.wants(event.type, about: event.apps) {
                entries.append(WebhookJournal.Entry(hook: i, order: event.order, created: event.createdAt.timeIntervalSince1970, body: body))
            }
        }
        try journal.append(entries, durable: true)
    }
}

/// The journal, set once after the delivery that needs it is made.
private final class JournalBox: @unchecked Sendable {
    var journal: WebhookJournal?
}
