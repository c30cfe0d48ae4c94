import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The dispatcher's counters and histograms, rendered in the Prometheus text exposition format
/// (what node_exporter's textfile collector reads). Counting costs one uncontended lock per
/// delivery and per request; rendering happens every `interval_seconds` on a timer.
public final class Metrics: Sendable {
    /// Request durations, seconds: upper bounds of the histogram buckets (`+Inf` is implied).
    public static let durationBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    package struct Histogram {
        package var buckets = [Int](repeating: 0, count: Metrics.durationBuckets.count)
        package var count = 0
        package var sum = 0.0
        package init() {}
    }

    private struct State {
        /// Deliveries by (platform, provider, status), and durations by provider: a few dozen
        /// entries at most, found by a linear search counted per target. Label values are short
        /// strings held inline, so comparing them is cheaper than hashing them for a dictionary.
        var deliveries: [(labels: Labels, count: Int)] = []
        var retries: [String: Int] = [:]
        var jobs: [String: Int] = [:]
        var durations: [(provider: String, histogram: Histogram)] = []
        /// Events apps reported (§ The app talks back), by app, platform and type.
        var notificationEvents: [NotificationEventLabels: Int] = [:]
    }
    struct NotificationEventLabels: Hashable { var app: String, platform: String, type: String }
    private let state = Mutex(State())
    /// The webhooks' counters and gauges (README "Webhooks").
    public let webhooks = WebhookMetrics()

    public init() {}

    struct Labels: Hashable { var platform: String, provider: String, status: String, app: String }

    public func delivery(platform: String, provider: String, status: String, app: String = AppConfig.implicitID) {
        let labels = Labels(platform: platform, provider: provider, status: status, app: app)
        state.withLock { s in
            if let i = s.deliveries.firstIndex(where: { $0.labels == labels }) {
                s.deliveries[i].count += 1
            } else {
                s.deliveries.append((labels, 1))
            }
        }
    }

    /// One event an app reported, counted once (a repeated report is not).
    public func notificationEvent(app: String, platform: String, type: String) {
        state.withLock { $0.notificationEvents[NotificationEventLabels(app: app, platform: platform, type: type), default: 0] += 1 }
    }

    public func retry(provider: String) {
        state.withLock { $0.retries[provider, default: 0] += 1 }
    }

    public func job(status: String) {
        state.withLock { $0.jobs[status, default: 0] += 1 }
    }

    public func requestDuration(provider: String, seconds: Double) {
        let bucket = Self.durationBuckets.firstIndex { seconds <= $0 }
        state.withLock { s in
            var i = s.durations.firstIndex { $0.provider == provider } ?? -1
            if i < 0 {
                s.durations.append((provider, Histogram()))
                i = s.durations.count - 1
            }
            // In place: no copy of the bucket array per request.
            if let bucket { s.durations[i].histogram.buckets[bucket] += 1 }
            s.durations[i].histogram.count += 1
            s.durations[i].histogram.sum += seconds
        }
    }

    /// Gauges read when the file is written.
    public struct Gauges: Sendable {
        public var queue: [(folder: String, jobs: Int)] = []
        public var targetsRemaining = 0
        public var providers: [(name: String, paused: Bool)] = []
        /// Each provider's connections, requests in flight and failed answers by code (`ProviderState.runtime`).
        public var runtime: [ProviderRuntime] = []
        public init() {}
    }

    /// The exposition text: each family once, with HELP and TYPE, label values escaped,
    /// histogram buckets cumulative and ending with `+Inf`, then `_sum` and `_count`.
    public func render(_ gauges: Gauges) -> String {
        let s = state.withLock { $0 }
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        func sample(_ name: String, _ labels: [(String, String)], _ value: String) {
            let l = labels.isEmpty ? "" : "{" + labels.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",") + "}"
            out += "\(name)\(l) \(value)\n"
        }
        family("pushspool_deliveries_total", "counter", "Targets that reached a final outcome, by platform, provider, status and app.")
        for (k, v) in s.deliveries.sorted(by: { ($0.labels.platform, $0.labels.provider, $0.labels.status, $0.labels.app)
                                                < ($1.labels.platform, $1.labels.provider, $1.labels.status, $1.labels.app) }) {
            sample("pushspool_deliveries_total", [("platform", k.platform), ("provider", k.provider), ("status", k.status), ("app", k.app)], String(v))
        }
        family("pushspool_retries_total", "counter", "Requests retried after a transient failure, by provider.")
        for (k, v) in s.retries.sorted(by: { $0.key < $1.key }) { sample("pushspool_retries_total", [("provider", k)], String(v)) }
        family("pushspool_jobs_total", "counter", "Jobs this dispatcher ended, by status.")
        for (k, v) in s.jobs.sorted(by: { $0.key < $1.key }) { sample("pushspool_jobs_total", [("status", k)], String(v)) }
        family("pushspool_queue_jobs", "gauge", "Job files in each spool folder.")
        for q in gauges.queue { sample("pushspool_queue_jobs", [("folder", q.folder)], String(q.jobs)) }
        family("pushspool_targets_remaining", "gauge", "Targets of running jobs not yet at a final outcome.")
        sample("pushspool_targets_remaining", [], String(gauges.targetsRemaining))
        family("pushspool_provider_paused", "gauge", "1 while a provider is paused after its credentials were refused.")
        for p in gauges.providers { sample("pushspool_provider_paused", [("provider", p.name)], p.paused ? "1" : "0") }
        family("pushspool_provider_connections", "gauge", "Connections a provider's HTTP clients hold open.")
        for p in gauges.runtime { sample("pushspool_provider_connections", [("provider", p.name)], String(p.connections)) }
        family("pushspool_provider_requests_in_flight", "gauge", "Requests a provider's HTTP clients were given and have not answered.")
        for p in gauges.runtime { sample("pushspool_provider_requests_in_flight", [("provider", p.name)], String(p.inFlight)) }
        family("pushspool_provider_errors_total", "counter", "Answers of a provider that were not a delivery (retried ones too), by provider and code.")
        for p in gauges.runtime {
            for (code, n) in p.errorTotals.sorted(by: { $0.key < $1.key }) {
                sample("pushspool_provider_errors_total", [("provider", p.name), ("code", code)], String(n))
            }
        }
        family("pushspool_provider_request_duration_seconds", "histogram", "Time from sending a request to its answer, by provider.")
        for (provider, h) in s.durations.sorted(by: { $0.provider < $1.provider }) {
            var cumulative = 0
            for (i, bound) in Self.durationBuckets.enumerated() {
                cumulative += h.buckets[i]
                sample("pushspool_provider_request_duration_seconds_bucket", [("provider", provider), ("le", Self.number(bound))], String(cumulative))
            }
            sample("pushspool_provider_request_duration_seconds_bucket", [("provider", provider), ("le", "+Inf")], String(h.count))
            sample("pushspool_provider_request_duration_seconds_sum", [("provider", provider)], Self.number(h.sum))
            sample("pushspool_provider_request_duration_seconds_count", [("provider", provider)], String(h.count))
        }
        family("pushspool_notification_events_total", "counter", "Events apps reported of tracked notifications, by app, platform and type.")
        for (k, v) in s.notificationEvents.sorted(by: { ($0.key.app, $0.key.platform, $0.key.type) < ($1.key.app, $1.key.platform, $1.key.type) }) {
            sample("pushspool_notification_events_total", [("app", k.app), ("platform", k.platform), ("type", k.type)], String(v))
        }
        out += webhooks.render()
        return out
    }

    /// Writes `text` to `path` atomically (a temporary file in the same folder, renamed), so the
    /// collector never reads half a file.
    public static func write(_ text: String, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        do {
            try DurableFile().write(Array(text.utf8), to: url, temporary: DurableFile.temporary(for: url), mode: 0o644, syncFolder: false)
        } catch {
            throw SpoolError("cannot write \(path): \(error)")
        }
    }

    /// `text` with `labels` added first to every sample (`name{a="1"} 2` → `name{p="x",a="1"} 2`,
    /// `name 2` → `name{p="x"} 2`); comments are left as they are.
    static func labelled(_ text: String, with labels: [(String, String)]) -> String {
        guard !labels.isEmpty else { return text }
        let added = labels.map { "\($0.0)=\"\(escape($0.1))\"" }.joined(separator: ",")
        var out = ""
        out.reserveCapacity(text.utf8.count + text.utf8.count / 2)
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            // A metric name holds neither a brace nor a space: the first of them ends it.
            if !line.hasPrefix("#"), let end = line.firstIndex(where: { $0 == "{" || $0 == " " }) {
                if line[end] == "{" {
                    let rest = line[line.index(after: end)...]          // `a="1"} 2` or `} 2`
                    out += line[..<end] + "{" + added + (rest.hasPrefix("}") ? "" : ",") + rest
                } else {
                    out += line[..<end] + "{" + added + "}" + line[end...]
                }
            } else {
                out += line
            }
            out += "\n"
        }
        return String(out.dropLast())
    }

    /// Several exposition texts as one: each family once (its HELP and TYPE from the first text
    /// that has it) with the samples of every text, in the order families first appear. Texts
    /// of processes whose samples differ by label (`MetricsTextfile`) merge into a valid whole.
    package static func merge(_ texts: [String]) -> String {
        var order: [String] = []
        var families: [String: (header: [Substring], samples: [Substring])] = [:]
        for text in texts {
            var current: String?
            for line in text.split(separator: "\n") {
                if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") {
                    let name = String(line.dropFirst(7).prefix { $0 != " " })
                    if families[name] == nil {
                        families[name] = ([], [])
                        order.append(name)
                    }
                    if !families[name]!.header.contains(where: { $0.prefix(7) == line.prefix(7) }) { families[name]!.header.append(line) }
                    current = name
                } else if line.hasPrefix("#") {
                    continue
                } else if let current {
                    families[current]!.samples.append(line)
                }
            }
        }
        var out = ""
        for name in order {
            guard let f = families[name] else { continue }
            for line in f.header + f.samples { out += line + "\n" }
        }
        return out
    }

    package static func escape(_ v: String) -> String {
        v.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }

    package static func number(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
    }
}
