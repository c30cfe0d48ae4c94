import Foundation
import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// Webhook events pending while the receiver is down: `events` job.finished events in
/// `webhooks/pending/` (1,000 per journal file, as a run whose receiver was down for long leaves
/// them), the webhook's URL a loopback port where nothing listens (every attempt refused), and
/// `run --once`: it reads the backlog, posts what its window holds, schedules the retries and
/// exits. Figures: its peak RSS (target ≤ 64 MB), and the events still pending afterwards (all of
/// them: nothing delivered, nothing lost). With `--baseline BINARY`, that build too, alternately.
enum WebhookBacklogBench {
    struct Figures {
        var peakRSS: Int
        var seconds: Double
        var pendingAfter: Int
    }

    static func printRows(events: Int, runs: Int, baseline: String?) throws {
        let binary = try BenchPaths.releaseBinary()
        var ours: [Figures] = [], theirs: [Figures] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("webhook backlog run \(i + 1)/\(runs) (\(events) events pending)…\n".utf8))
            ours.append(try run(binary: binary, events: events))
            if let baseline { theirs.append(try run(binary: baseline, events: events)) }
        }
        for f in ours + theirs where f.pendingAfter != events {
            throw BenchError(description: "\(events - f.pendingAfter) webhook events lost from webhooks/pending/")
        }
        let rss = median(ours.map { Double($0.peakRSS) })
        let peer = theirs.isEmpty ? "" : "baseline " + mb(median(theirs.map { Double($0.peakRSS) }))
        row(["\(events) webhook events pending, receiver refusing: run --once peak RSS", mb(rss), peer,
             theirs.isEmpty ? "" : String(format: "%.2f×", rss / median(theirs.map { Double($0.peakRSS) })),
             "≤ 64 MB", rss <= 64 * 1_048_576 ? "yes" : "no"])
        row(["same: run --once wall time", String(format: "%.1f s", median(ours.map(\.seconds))),
             theirs.isEmpty ? "" : String(format: "baseline %.1f s", median(theirs.map(\.seconds))), "", "", ""])
    }

    static func run(binary: String, events: Int) throws -> Figures {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pushspool-bench-backlog-\(getpid())-\(UUID().uuidString.prefix(6))")
        defer { try? FileManager.default.removeItem(at: dir) }
        let spool = dir.appendingPathComponent("spool")
        let url = "http://127.0.0.1:\(try refusingPort())/hook"
        let config = dir.appendingPathComponent("pushspool.json")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try Data(#"{"spool": "spool", "webhooks": [{"url": "\#(url)", "secret": "env:BENCH_HOOK_SECRET", "events": ["job.finished"]}]}"#.utf8)
            .write(to: config)
        let env = ["BENCH_HOOK_SECRET": "bench-webhook-secret-0123456789"]
        let initialized = try measure(binary, ["init", "--config", config.path], env: env)
        guard initialized.status == 0 else { throw BenchError(description: "init: \(initialized.stderr)") }
        try writeBacklog(events: events, url: url, into: spool.appendingPathComponent("webhooks/pending"))
        let m = try measure(binary, ["run", "--once", "--config", config.path], env: env)
        guard m.status == 0 else { throw BenchError(description: "run --once exited \(m.status): \(m.stderr.suffix(2000))") }
        return Figures(peakRSS: m.peakRSS, seconds: m.seconds, pendingAfter: WebhookJournal.counts(spoolRoot: spool).pending)
    }

    /// A loopback port where nothing listens: bound to learn a free one, then closed.
    static func refusingPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw BenchError(description: "bind: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Journal files as the webhooks' writer makes them (`WebhookJournal`): one JSON line per
    /// event, the webhook named by the first 8 bytes of its URL's SHA-256 in hex.
    static func writeBacklog(events: Int, url: String, into pending: URL) throws {
        let key = SHA256.digest(Array(url.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        let created = Int(Date().timeIntervalSince1970 * 1000)
        try FileManager.default.createDirectory(at: pending, withIntermediateDirectories: true)
        var n = 0, file = 0
        while n < events {
            file += 1
            var text = ""
            text.reserveCapacity(1000 * 300)
            for _ in 0..<min(1000, events - n) {
                n += 1
                let body = #"{\"id\":\"evt_bench_\#(n)\",\"type\":\"job.finished\",\"created_at\":\"2026-11-28T00:00:00Z\",\"data\":{\"id\":\"job-\#(n)\",\"status\":\"done\",\"targets\":1,\"delivered\":1,\"failed\":0,\"apps\":[\"default\"]}}"#
                text += #"{"hook":"\#(key)","order":"job-\#(n)","created":\#(created),"body":"\#(body)"}"# + "\n"
            }
            try Data(text.utf8).write(to: pending.appendingPathComponent(String(format: "%013ld-1-%08ld.jsonl", created, file)))
        }
    }
}
