// pushspool-bench [apns|nginx|kinds|channel|webpush|registry|postgres|serve|flood|apps|webhooks|caps|clocks|queue|secure|receipts|webhook-backlog|dashboard|hms|all] [--count N] [--concurrency C] [--devices N] [--runs R] [--baseline BINARY [--unobserved]]
//                 [--postgres URI]
//
// Prints one table: the median of R runs (default 3) of each figure, beside its peer measured in
// the same run. `apns`: pushspool vs Node's http2 client vs h2load on the same fake APNs.
// `kinds`: --count Live Activity updates against as many alerts, each round both, to one nginx
// (fixed 200): the rate ratio (issue "Every kind of push": ≥ 0.95×); then `channel`.
// `channel`: --jobs (default 11) broadcast-channel jobs dropped one at a time into a running
// `pushspool run`: drop → the one request's arrival at nginx (≤ 20 ms once connected).
// `nginx`: APNs-shaped pushes to nginx (TLS, HTTP/2, a fixed 200; not the bottleneck): pushspool's
// whole process vs Node's http2 client vs h2load, N = --count (default 100,000) at --concurrency
// (default 1000); then answers held 100 ms, --latency-count devices (default 30,000) at
// --latency-concurrency (default 4000) vs h2load -c 4 -m 1000.
// `webpush`: pushspool vs Node's crypto + http2 client (RFC 8291 encryption, VAPID) on the same
// fake push service.
// `registry`: import, a sandbox broadcast, a tag-expression resolution and `devices > file` over N devices; with
// `--postgres URI`, also on a PostgreSQL registry (a database of its own: its tables are dropped).
// `postgres --postgres URI`: that PostgreSQL half alone.
// `serve`: the HTTP front door under wrk beside nginx's fixed 200: /healthz, the tutorial's PUT
// /api/register with Basic auth (SQLite; PostgreSQL with `--postgres URI`), POST /v1/jobs (durable),
// RSS with 1,000 open connections. `--seconds S` per load (default 5).
// `flood`: `--files N` (default 100,000) one-device job files dropped at once, drained by `run
// --once`: jobs/s, run's peak RSS, the worst `status` answer meanwhile; `--flood-seconds S` stops
// the dispatcher after S s instead (a million waiting files); `--baseline BINARY` drains the same
// flood with that binary too.
// `apps`: several apps in one dispatcher: a sandbox broadcast to --devices over 4 apps vs one app,
// 100,000 APNs pushes to nginx over 3 apps vs one (--count), and the migration of a --devices
// registry of the last release vs SQLite's shell building the same index.
// `webhooks`: the flood (`--files N`, default 100,000) without and with a job.finished webhook to
// nginx, paired in each of `--runs`: the time with over the time without (target ≤ 1.10).
// `caps`: a capped sandbox broadcast to --devices against the same broadcast uncapped.
// `clocks`: a local_time broadcast to --devices over 35 UTC offsets (an injected clock brings every
// wave due at once) vs a plain broadcast to the same devices: CPU of run --once (≤ 1.15×).
// `queue`: the job queue in PostgreSQL on a throwaway cluster the bench starts: one --devices job
// (default 300,000 here) with nginx answering after 100 ms, 3 hosts vs 1 (≥ 2.5×); one host through
// the queue vs spool-only against nginx's fixed 200 (≥ 0.9×); takeover after kill -9 (≤ lease + 5 s).
// `secure`: a secure sandbox broadcast to --devices vs the same broadcast plain (≤ 1.1×); serve answering
// GET /api/notifications/{id} (≥ 5,000/s) and POST /v1/events in batches of 1,000 (≥ 20,000 events/s)
// over the ids of a secure job to --fetch-devices (default 100,000) devices of one user; serve's peak RSS (≤ 64 MB).
// `receipts`: that serve half alone.
// `webhook-backlog`: --events (default 1,000,000) webhook events pending in webhooks/pending/ with
// the receiver refusing connections: run --once's peak RSS (≤ 64 MB), every event still pending after.
// `dashboard`: a sandbox broadcast to --devices with 100 dashboard sessions polling its page vs serve idle (≤ 1.05×);
// the campaign list over --jobs jobs (default 100,000): pages, text search (≤ 200 ms); serve's peak RSS (≤ 64 MB).
// `hms`: one campaign to --devices (default 100,000 here) Huawei devices against the fake Push Kit
// answering at once, beside as many FCM devices against the fake FCM, at --concurrency (default
// 1000 here): pushes/s and the ratio (HMS carries up to 1,000 tokens a request).
// README.md next to this file explains each figure and how it is measured.
import Foundation
import PushspoolHTTP
#if canImport(Glibc)
import Glibc
#endif

func option(_ name: String, default value: Int) -> Int {
    let args = CommandLine.arguments
    guard let i = args.firstIndex(of: "--\(name)"), i + 1 < args.count, let n = Int(args[i + 1]), n > 0 else { return value }
    return n
}

let args = CommandLine.arguments
let what = args.count >= 2 && !args[1].hasPrefix("--") ? args[1] : "all"
guard ["apns", "nginx", "kinds", "channel", "webpush", "registry", "postgres", "serve", "flood", "apps", "webhooks", "caps", "clocks", "queue", "secure", "receipts", "webhook-backlog", "dashboard", "hms", "all"].contains(what) else {
    print("usage: pushspool-bench [apns|nginx|kinds|channel|webpush|registry|postgres|serve|flood|apps|webhooks|caps|clocks|queue|secure|receipts|webhook-backlog|dashboard|hms|all] [--count N] [--concurrency C] [--devices N] [--runs R] [--baseline BINARY [--unobserved]] [--postgres URI]")
    exit(64)
}
let count = option("count", default: 30_000)
/// Web Push costs two ECDH per notification (ours and the fake's decryption): fewer by default.
let webCount = option("count", default: 20_000)
let concurrency = option("concurrency", default: 256)
let devices = option("devices", default: 1_000_000)
let runs = option("runs", default: 3)

func stringOption(_ name: String) -> String? {
    let args = CommandLine.arguments
    guard let i = args.firstIndex(of: "--\(name)"), i + 1 < args.count else { return nil }
    return args[i + 1]
}

let postgres = stringOption("postgres")
/// `--unobserved`: pushspool runs as the `--baseline` binary does, so the pair differs by code only.
let unobserved = CommandLine.arguments.contains("--unobserved")

func mb(_ bytes: Double) -> String { String(format: "%.0f MB", bytes / 1_048_576) }
func rate(_ r: Double) -> String { r >= 1e6 ? String(format: "%.2fM/s", r / 1e6) : String(format: "%.0f/s", r) }
func row(_ cells: [String]) { print("| " + cells.joined(separator: " | ") + " |") }

do {
    print("pushspool-bench: median of \(runs) runs, each figure beside its peer in the same run (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
    print("")
    row(["figure", "pushspool", "peer", "ratio", "target", "met"])
    row(["---", "---", "---", "---", "---", "---"])
    if what == "apns" || what == "all" {
        var rounds: [APNsRound] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("apns run \(i + 1)/\(runs)…\n".utf8))
            rounds.append(try APNsRound.run(count: count, concurrency: concurrency, baseline: stringOption("baseline"), observed: !unobserved))
        }
        let ours = median(rounds.map { $0.pushspool.rate })
        let node = median(rounds.map { $0.node.rate })
        let ceiling = rounds.compactMap { $0.h2load?.rate }
        let h2 = ceiling.isEmpty ? Double.nan : median(ceiling)
        let vsNode = median(rounds.map { $0.pushspool.rate / $0.node.rate })
        let vsH2 = ceiling.isEmpty ? Double.nan : median(rounds.compactMap { r in r.h2load.map { r.pushspool.rate / $0.rate } })
        let rateMet = vsNode >= 1.5 || vsH2 >= 0.85
        row(["APNs, \(count) notifications, \(concurrency) streams: rate", rate(ours), "node http2 \(rate(node))",
             String(format: "%.2f×", vsNode), "≥ 1.5× node", vsNode >= 1.5 ? "yes" : "no"])
        row(["same, against the fake's ceiling", rate(ours), "h2load \(rate(h2))",
             String(format: "%.0f%%", vsH2 * 100), "or ≥ 85% of h2load", rateMet ? "yes" : "no"])
        let ourCPU = median(rounds.map { $0.pushspool.cpuMicrosPerRequest })
        let nodeCPU = median(rounds.map { $0.node.cpuMicrosPerRequest })
        let cpuRatio = median(rounds.map { $0.pushspool.cpuMicrosPerRequest / $0.node.cpuMicrosPerRequest })
        let h2CPU = ceiling.isEmpty ? "" : String(format: ", h2load %.1f µs", median(rounds.compactMap { $0.h2load?.cpuMicrosPerRequest }))
        row(["CPU per notification (whole process)", String(format: "%.1f µs", ourCPU), String(format: "node %.1f µs%@", nodeCPU, h2CPU as NSString),
             String(format: "%.2f×", cpuRatio), "≤ 0.35× node", cpuRatio <= 0.35 ? "yes" : "no"])
        let fakeH2 = ceiling.isEmpty ? "" : String(format: ", for h2load %.1f µs", median(rounds.compactMap { $0.h2load?.fakeMicrosPerRequest }))
        row(["the fake's own CPU per request", String(format: "%.1f µs", median(rounds.map { $0.pushspool.fakeMicrosPerRequest })),
             String(format: "for node %.1f µs%@", median(rounds.map { $0.node.fakeMicrosPerRequest }), fakeH2 as NSString), "", "", ""])
        row(["peak RSS", mb(median(rounds.map { Double($0.pushspool.peakRSS) })), "node " + mb(median(rounds.map { Double($0.node.peakRSS) })), "", "", ""])
        let dups = rounds.map { $0.pushspool.duplicates }.max() ?? -1
        let delivered = rounds.map { $0.pushspool.delivered }.min() ?? -1
        let jwts = rounds.map { $0.pushspool.jwts }.max() ?? -1
        let conns = rounds.map { $0.pushspool.connections }.max() ?? -1
        row(["delivered / duplicates / JWTs / TLS connections (worst run)", "\(delivered) / \(dups) / \(jwts) / \(conns)",
             "node \(rounds.map { $0.node.delivered }.min() ?? -1) / \(rounds.map { $0.node.duplicates }.max() ?? -1) / 1 / \(rounds.map { $0.node.connections }.max() ?? -1)",
             "", "\(count) / 0 / 1", delivered == count && dups == 0 && jwts == 1 ? "yes" : "no"])
        if rounds.allSatisfy({ $0.baseline != nil }) {
            // The same run with the other binary, round by round: what observing costs, or with
            // --unobserved what a code change costs.
            let vsBase = median(rounds.map { $0.pushspool.rate / $0.baseline!.rate })
            let target = unobserved ? 0.95 : 0.97
            row([unobserved ? "same setup, vs --baseline binary" : "same, metrics file (1 s) + JSON events + control watch on, vs --baseline binary",
                 rate(ours), "baseline " + rate(median(rounds.map { $0.baseline!.rate })),
                 String(format: "%.3f×", vsBase), String(format: "≥ %.2f×", target), vsBase >= target ? "yes" : "no"])
            row(["CPU per notification vs --baseline binary", String(format: "%.1f µs", ourCPU),
                 String(format: "baseline %.1f µs", median(rounds.map { $0.baseline!.cpuMicrosPerRequest })),
                 String(format: "%.3f×", median(rounds.map { $0.pushspool.cpuMicrosPerRequest / $0.baseline!.cpuMicrosPerRequest })), "", ""])
        }
    }
    if what == "hms" {
        try HMSRound.printRows(devices: option("devices", default: 100_000), concurrency: option("concurrency", default: 1000))
    }
    if what == "nginx" || what == "all" {
        try NginxRound.printRows(count: option("count", default: 100_000), concurrency: option("concurrency", default: 1000),
                                 latencyCount: option("latency-count", default: 30_000),
                                 latencyConcurrency: option("latency-concurrency", default: 4000), runs: runs)
    }
    if what == "kinds" || what == "all" {
        try KindsRound.printRows(count: option("count", default: 100_000), concurrency: option("concurrency", default: 1000), runs: runs)
    }
    if what == "channel" || what == "kinds" || what == "all" { try ChannelRound.printRows(jobs: option("jobs", default: 11)) }
    if what == "webpush" || what == "all" { try WebPushRound.printRows(count: webCount, concurrency: concurrency, runs: runs) }
    if what == "registry" || what == "all" {
        try RegistryRound.printRows(devices: devices, runs: runs)
        if let postgres { try PostgresRegistryRound.printRows(devices: devices, runs: runs, uri: postgres) }
    }
    if what == "postgres" {
        // The PostgreSQL half of `registry` alone (at ten million devices the SQLite half takes minutes).
        guard let postgres else { throw BenchError(description: "postgres: give the database with --postgres URI") }
        try PostgresRegistryRound.printRows(devices: devices, runs: runs, uri: postgres)
    }
    if what == "serve" || what == "all" {
        try ServeRound.printRows(seconds: option("seconds", default: 5), devices: devices, runs: runs, postgres: postgres)
    }
    if what == "apps" || what == "all" {
        try AppsRound.printRows(devices: devices, nginxCount: option("count", default: 100_000),
                                concurrency: option("concurrency", default: 1000), runs: runs)
    }
    if what == "caps" || what == "all" { try CapsRound.printRows(devices: devices, runs: runs) }
    if what == "secure" || what == "all" {
        try SecureRound.printRows(devices: devices, fetchDevices: option("fetch-devices", default: 100_000),
                                  seconds: option("seconds", default: 5), runs: runs)
    }
    if what == "receipts" {
        // The serve half of `secure` alone.
        try ReceiptsServe.printRows(devices: option("fetch-devices", default: 100_000), seconds: option("seconds", default: 5))
    }
    if what == "dashboard" || what == "all" { try DashboardBench.printRows(devices: devices, jobs: option("jobs", default: 100_000), runs: runs) }
    if what == "webhooks" || what == "all" { try WebhookFloodBench.printRows(files: option("files", default: 100_000), runs: runs) }
    if what == "webhook-backlog" {
        try WebhookBacklogBench.printRows(events: option("events", default: 1_000_000), runs: runs, baseline: stringOption("baseline"))
    }
    if what == "clocks" || what == "all" { try ClocksRound.printRows(devices: devices, runs: runs) }
    if what == "queue" { try QueueRound.printRows(devices: option("devices", default: 300_000), concurrency: concurrency, runs: runs) }
    if what == "flood" || what == "all" {
        try FloodRound.printRows(files: option("files", default: 100_000), runs: runs,
                                 stopAfter: stringOption("flood-seconds").flatMap(Double.init), baseline: stringOption("baseline"))
    }
} catch {
    FileHandle.standardError.write(Data("pushspool-bench: \(error)\n".utf8))
    exit(1)
}
