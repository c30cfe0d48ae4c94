import PushspoolKit
import Foundation
import PushspoolCore

/// `GET /healthz` (anyone: load balancers) and `GET /metrics` (services: Prometheus with a bearer token).
public struct OperationsAPI: Sendable {
    let health: HealthCheck
    let metrics: HTTPMetrics
    let spool: Spool
    /// The dispatcher's metrics file (`metrics.textfile`), served along with serve's own.
    let dispatcherTextfile: String?

    public init(health: HealthCheck, metrics: HTTPMetrics, spool: Spool, dispatcherTextfile: String?) {
        self.health = health
        self.metrics = metrics
        self.spool = spool
        self.dispatcherTextfile = dispatcherTextfile
    }

    public var routes: [FrontDoor.Route] {
        [
            .init("GET", "/healthz", .open) { call in
                // A lock and a string: the checks themselves run once a second on a timer.
                if let problem = health.currentProblem {
                    call.respond(.error(503, problem, headers: [("Retry-After", "5")]))
                } else {
                    call.respond(.text(200, "ok\n"))
                }
            },
            .init("GET", "/metrics", .service) { call in
                call.later { .text(200, render(), contentType: "text/plain; version=0.0.4; charset=utf-8") }
            },
        ]
    }

    /// serve's own families, then the dispatcher's file when `run` writes one (it has the
    /// deliveries, retries, jobs and queue gauges); without it, the queue gauges from here.
    func render() -> String {
        var text = metrics.render()
        // Every dispatcher's file (each labels its samples with its `process`), merged family by family.
        let files = dispatcherTextfile.map(MetricsTextfile.dispatcherFiles) ?? []
        let texts = files.compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }.filter { !$0.isEmpty }
        if !texts.isEmpty {
            text += Metrics.merge(texts)
        } else {
            text += "# HELP pushspool_queue_jobs Job files in each spool folder.\n# TYPE pushspool_queue_jobs gauge\n"
            for folder in [Spool.Folder.incoming, .active, .done, .failed] {
                text += "pushspool_queue_jobs{folder=\"\(folder.rawValue)\"} \(spool.count(folder))\n"
            }
        }
        return text
    }
}
