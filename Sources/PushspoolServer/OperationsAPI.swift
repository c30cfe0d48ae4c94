import PushspoolKit
import Foundation
import PushspoolCore

/// `GET /healthz` (anyone: load balancers), `GET /metrics` (services: Prometheus with a bearer token)
/// and `GET /v1/openapi.json` (anyone: the routes' contract).
public struct OperationsAPI: Sendable {
    let health: HealthCheck
    let metrics: HTTPMetrics
    let spool: Spool
    /// The dispatcher's metrics file (`metrics.textfile`), served along with serve's own.
    let dispatcherTextfile: String?
    /// The events apps reported through this server (the desk counts them).
    let events: Metrics?

    public init(health: HealthCheck, metrics: HTTPMetrics, spool: Spool, dispatcherTextfile: String?, events: Metrics? = nil) {
        self.health = health
        self.metrics = metrics
        self.spool = spool
        self.dispatcherTextfile = dispatcherTextfile
        self.events = events
    }

    /// `pushspool_notification_events_total` alone, out of the engine's rendering (serve has no
    /// deliveries or queue of its own to count).
    static func eventFamily(_ events: Metrics) -> String {
        let name = "pushspool_notification_events_total"
        return events.render(Metrics.Gauges()).split(separator: "\n").filter {
            $0.hasPrefix(name) || $0.hasPrefix("# HELP \(name) ") || $0.hasPrefix("# TYPE \(name) ")
        }.map { $0 + "\n" }.joined()
    }

    public var routes: [FrontDoor.Route] {
        [
            .init("GET", "/healthz", .open) { call in
                // A lock and a string, but for the first probe after the answer aged a second.
                health.answer { problem in
                    if let problem {
                        call.respond(.error(503, problem, headers: [("Retry-After", "5")]))
                    } else {
                        call.respond(.text(200, "ok\n"))
                    }
                }
            },
            .init("GET", "/metrics", .service) { call in
                call.later { .text(200, render(), contentType: "text/plain; version=0.0.4; charset=utf-8") }
            },
            OpenAPIDocument.route,
        ]
    }

    /// serve's own families, then the dispatcher's file when `run` writes one (it has the
    /// deliveries, retries, jobs and queue gauges); without it, the queue gauges from here.
    func render() -> String {
        var text = metrics.render()
        // Every dispatcher's file (each labels its samples with its `process`), merged family by
        // family, with the events reported here in theirs.
        let files = dispatcherTextfile.map(MetricsTextfile.dispatcherFiles) ?? []
        let texts = files.compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }.filter { !$0.isEmpty }
        let own = events.map(Self.eventFamily) ?? ""
        if !texts.isEmpty {
            text += Metrics.merge(texts + [own])
        } else {
            text += own
            text += "# HELP pushspool_queue_jobs Job files in each spool folder.\n# TYPE pushspool_queue_jobs gauge\n"
            for folder in [Spool.Folder.incoming, .active, .done, .failed] {
                text += "pushspool_queue_jobs{folder=\"\(folder.rawValue)\"} \(spool.count(folder))\n"
            }
        }
        return text
    }
}
