import Foundation
import PushspoolKit

/// Webhooks under a flood: the `flood` round (N one-device job files dropped at once, drained by
/// `run --once`, sandbox provider) paired in one run, without webhooks and with one webhook that
/// takes `job.finished` (an event per job, journalled in `webhooks/` before its job leaves
/// `active/`) posted to nginx (`return 200` on loopback http). Figures: the time of each, the
/// ratio (target ≤ 1.10), and the events left undelivered (must be 0).
enum WebhookFloodBench {
    static func printRows(files: Int, runs: Int) throws {
        let nginxDir = FileManager.default.temporaryDirectory.appendingPathComponent("pushspool-bench-hooks-nginx-\(getpid())")
        defer { try? FileManager.default.removeItem(at: nginxDir) }
        let nginx = try Nginx(binary: try Nginx.binary(), dir: nginxDir, server: #"location / { return 200 "ok\n"; }"#)
        defer { nginx.stop() }
        setenv("BENCH_HOOK_SECRET", "bench-webhook-secret-0123456789", 1)
        let plain: (String) -> String = { spool in #"{"spool": "\#(spool)"}"# }
        let hooked: (String) -> String = { spool in
            #"{"spool": "\#(spool)", "webhooks": [{"url": "http://127.0.0.1:\#(nginx.port)/hook", "secret": "env:BENCH_HOOK_SECRET", "events": ["job.finished"]}]}"#
        }
        var without: [Double] = [], with: [Double] = [], ratios: [Double] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("webhooks flood run \(i + 1)/\(runs) (\(files) files, without then with)…\n".utf8))
            let a = try FloodRound.run(binary: BenchPaths.binary.path, files: files, stopAfter: nil, config: plain)
            let b = try FloodRound.run(binary: BenchPaths.binary.path, files: files, stopAfter: nil, config: hooked)
            guard a.jobs == files, b.jobs == files else { throw BenchError(description: "a flood left jobs undone (\(a.jobs), \(b.jobs))") }
            guard b.webhooksPending == 0 else { throw BenchError(description: "\(b.webhooksPending) webhook events left undelivered") }
            without.append(a.seconds)
            with.append(b.seconds)
            ratios.append(b.seconds / a.seconds)
            FileHandle.standardError.write(Data(String(format: "  without %.1f s, with %.1f s (%.3f×)\n", a.seconds, b.seconds, b.seconds / a.seconds).utf8))
        }
        let r = median(ratios)
        row(["\(files) one-device jobs, run --once, with job.finished webhooks to nginx: time",
             String(format: "%.1f s", median(with)), String(format: "without webhooks %.1f s", median(without)),
             String(format: "%.3f×", r), "≤ 1.10×", r <= 1.10 ? "yes" : "no"])
        row(["same: each pair (with / without)", ratios.map { String(format: "%.3f×", $0) }.joined(separator: ", "), "", "", "", ""])
    }
}
