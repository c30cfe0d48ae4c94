import PushspoolKit
import Synchronization

/// `serve`'s own metrics: requests by route and status code, and how long they took by route.
/// Routes are patterns (`PUT /api/register/{id}`), never paths: no id, handle or user reaches a
/// label, and the label set stays small whatever clients send.
public final class HTTPMetrics: Sendable {
    private struct Key: Hashable { var route: String, code: Int }
    private struct State {
        var requests: [Key: Int] = [:]
        var durations: [String: Metrics.Histogram] = [:]
    }
    private let state = Mutex(State())

    public init() {}

    public func record(route: String, code: Int, seconds: Double) {
        let bucket = Metrics.durationBuckets.firstIndex { seconds <= $0 }
        state.withLock { s in
            s.requests[Key(route: route, code: code), default: 0] += 1
            if let bucket { s.durations[route, default: Metrics.Histogram()].buckets[bucket] += 1 }
            s.durations[route, default: Metrics.Histogram()].count += 1
            s.durations[route, default: Metrics.Histogram()].sum += seconds
        }
    }

    /// The Prometheus text of both families.
    public func render() -> String {
        let s = state.withLock { $0 }
        var out = ""
        out += "# HELP pushspool_http_requests_total Requests answered by the front door, by route and status code.\n"
        out += "# TYPE pushspool_http_requests_total counter\n"
        for (k, v) in s.requests.sorted(by: { ($0.key.route, $0.key.code) < ($1.key.route, $1.key.code) }) {
            out += "pushspool_http_requests_total{route=\"\(Metrics.escape(k.route))\",code=\"\(k.code)\"} \(v)\n"
        }
        out += "# HELP pushspool_http_request_duration_seconds Time from a request's arrival to its answer, by route.\n"
        out += "# TYPE pushspool_http_request_duration_seconds histogram\n"
        for (route, h) in s.durations.sorted(by: { $0.key < $1.key }) {
            let r = Metrics.escape(route)
            var cumulative = 0
            for (i, bound) in Metrics.durationBuckets.enumerated() {
                cumulative += h.buckets[i]
                out += "pushspool_http_request_duration_seconds_bucket{route=\"\(r)\",le=\"\(Metrics.number(bound))\"} \(cumulative)\n"
            }
            out += "pushspool_http_request_duration_seconds_bucket{route=\"\(r)\",le=\"+Inf\"} \(h.count)\n"
            out += "pushspool_http_request_duration_seconds_sum{route=\"\(r)\"} \(Metrics.number(h.sum))\n"
            out += "pushspool_http_request_duration_seconds_count{route=\"\(r)\"} \(h.count)\n"
        }
        return out
    }
}
