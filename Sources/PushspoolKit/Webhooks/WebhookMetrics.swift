import Synchronization

/// The webhooks' samples in the metrics file: deliveries and retries (counters), events waiting
/// and events kept in `webhooks/failed/` (gauges; the failed count starts from what earlier runs
/// left there).
public final class WebhookMetrics: Sendable {
    let delivered = Atomic<Int>(0)
    let retries = Atomic<Int>(0)
    let pending = Atomic<Int>(0)
    let failed = Atomic<Int>(0)
    /// Whether any webhook is configured: without one, no webhook sample is written.
    let enabled = Atomic<Bool>(false)

    public init() {}

    public var deliveredCount: Int { delivered.load(ordering: .relaxed) }
    public var failedCount: Int { failed.load(ordering: .relaxed) }
    public var pendingCount: Int { pending.load(ordering: .relaxed) }

    func render() -> String {
        guard enabled.load(ordering: .relaxed) else { return "" }
        return """
        # HELP pushspool_webhooks_delivered_total Webhook events delivered (answered 2xx).
        # TYPE pushspool_webhooks_delivered_total counter
        pushspool_webhooks_delivered_total \(deliveredCount)
        # HELP pushspool_webhooks_retries_total Webhook posts retried after an answer other than 2xx or none.
        # TYPE pushspool_webhooks_retries_total counter
        pushspool_webhooks_retries_total \(retries.load(ordering: .relaxed))
        # HELP pushspool_webhooks_pending Webhook events written to webhooks/pending/ and not yet delivered.
        # TYPE pushspool_webhooks_pending gauge
        pushspool_webhooks_pending \(pendingCount)
        # HELP pushspool_webhooks_failed Webhook events given up after 24 hours, kept in webhooks/failed/.
        # TYPE pushspool_webhooks_failed gauge
        pushspool_webhooks_failed \(failedCount)

        """
    }
}

extension Atomic where Value == Int {
    func add(_ n: Int) { _ = wrappingAdd(n, ordering: .relaxed) }
}
