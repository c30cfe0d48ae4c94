import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The job queue in PostgreSQL (README "Several hosts"), each figure against its peer in the same
/// round, on one throwaway PostgreSQL cluster the bench starts itself (`initdb`, a Unix socket in
/// a folder of its own, durable settings: fsync and synchronous commit on; `pg_stat_statements`
/// loaded) and N APNs devices imported once:
///
/// - **Scaling**: one N-device job with nginx answering every push after 100 ms (`echo_sleep`),
///   sent by one host vs by three (`pushspool run` processes on spools of their own, one
///   registry), `concurrency` streams per host. Each rate is N over the time from the job's drop
///   on host a to its summary in a's result log (the hosts are running already). nginx's access
///   log says what it was sent: requests and distinct device URIs (duplicates).
/// - **Overhead**: one host, nginx answering at once (a fixed 200): the job through the queue vs
///   the same host with `"queue": {"enabled": false}` (spool-only, the same PostgreSQL registry);
///   and the one-host job of the scaling pair against the same host spool-only, answers 100 ms away.
/// - **Takeover**: three hosts, lease 10 s, chunks of 2,000 (a chunk lasts a few seconds, so the
///   others have room when the lease runs out); host c is killed (SIGKILL) a second after it
///   first holds chunks; the time until every chunk it held is claimed by another host, read from
///   `queue_chunks`. Then the job must end with every device delivered, duplicates within c's
///   in-flight bound (its concurrency).
///
/// Around each job: the hosts' and the cluster's CPU (/proc), and PostgreSQL's own counts
/// (`pg_stat_statements`, `pg_stat_database`, `pg_stat_wal`): what the capacity model in the
/// DocC catalog is checked against.
struct QueueRound {
    /// One job, dropped on host a, measured to its summary there.
    struct Sent {
        var seconds: Double
        var devices: Int
        var delivered: Int
        var distinct: Int
        var lines: Int
        /// CPU seconds of every running host, and of the PostgreSQL cluster.
        var hostCPU: Double
        var postgresCPU: Double
        /// Completed chunks per host, largest share first.
        var chunksByHost: [Int]
        /// From nginx's access log, when it keeps one: requests, distinct device URIs.
        var served: (requests: Int, uris: Int)?
        var database: DatabaseCounts
        var rate: Double { Double(devices) / seconds }
        var duplicates: Int? { served.map { $0.requests - $0.uris } }
    }

    struct Takeover {
        var job: Sent
        /// Chunks host c held when it was killed, and the time from the kill until the first and
        /// the last of them was claimed elsewhere.
        var held: Int
        var first: Double
        var last: Double
        /// How long c's leases still had to run at the kill (the database's clock).
        var leaseLeft: Double
    }

    var oneHost: Sent
    var threeHosts: Sent
    var queued: Sent
    var spoolOnly: Sent
    /// The same host spool-only with answers 100 ms away: the peer of `oneHost`.
    var spoolOnlyHeld: Sent
    var takeover: Takeover

    /// `--chunk-size` (default the configuration's default, 10,000): the scaling and overhead jobs' chunks.
    static let chunkSize = option("chunk-size", default: 10_000)
    static let takeoverChunk = 2_000
    static let takeoverLease = 10

    /// `pushspool-bench queue`: R rounds, one row per figure (medians; the worst run where it counts).
    /// `--overhead-only`: only the overhead pair against nginx's fixed 200, each round (what to
    /// run while working on the queue's cost).
    static func printRows(devices: Int, concurrency: Int, runs: Int) throws {
        let bench = try QueueBench(devices: devices, concurrency: concurrency)
        defer { bench.close() }
        try bench.prepare()
        if CommandLine.arguments.contains("--overhead-only") { return try printOverhead(bench, devices: devices, runs: runs) }
        var rounds: [QueueRound] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("queue run \(i + 1)/\(runs)…\n".utf8))
            rounds.append(try bench.round(i))
        }
        func ratio(_ x: Double) -> String { String(format: "%.2f×", x) }
        func us(_ x: Double) -> String { String(format: "%.1f µs", x) }
        func yes(_ b: Bool) -> String { b ? "yes" : "no" }

        let scale = median(rounds.map { $0.threeHosts.rate / $0.oneHost.rate })
        row(["queue: nginx answering after 100 ms, \(devices) devices, concurrency \(concurrency) per host, chunks of \(chunkSize): 3 hosts vs 1",
             rate(median(rounds.map(\.threeHosts.rate))), "1 host " + rate(median(rounds.map(\.oneHost.rate))), ratio(scale), "≥ 2.5×", yes(scale >= 2.5)])
        let worst3 = rounds.map(\.threeHosts).min { $0.distinct < $1.distinct }!
        let worst1 = rounds.map(\.oneHost).min { $0.distinct < $1.distinct }!
        let sentOnce = rounds.allSatisfy { r in [r.oneHost, r.threeHosts].allSatisfy { $0.delivered == devices && $0.distinct == devices && $0.duplicates == 0 } }
        row(["same: delivered / distinct / duplicates at nginx; chunks by host (worst run)",
             "\(worst3.delivered) / \(worst3.distinct) / \(worst3.duplicates ?? -1); \(worst3.chunksByHost.map(String.init).joined(separator: "+"))",
             "1 host \(worst1.delivered) / \(worst1.distinct) / \(worst1.duplicates ?? -1)", "", "\(devices) / \(devices) / 0", yes(sentOnce)])
        row(["same: CPU per push, all hosts / PostgreSQL", us(median(rounds.map { $0.threeHosts.hostCPU / Double(devices) * 1e6 })) + " / "
                + us(median(rounds.map { $0.threeHosts.postgresCPU / Double(devices) * 1e6 })),
             "1 host " + us(median(rounds.map { $0.oneHost.hostCPU / Double(devices) * 1e6 })) + " / "
                + us(median(rounds.map { $0.oneHost.postgresCPU / Double(devices) * 1e6 })), "", "", ""])

        let cost = median(rounds.map { $0.queued.rate / $0.spoolOnly.rate })
        row(["one host, nginx fixed 200, \(devices) devices: through the queue vs spool-only (queue.enabled false, same registry)",
             rate(median(rounds.map(\.queued.rate))), "spool-only " + rate(median(rounds.map(\.spoolOnly.rate))), ratio(cost), "≥ 0.9×", yes(cost >= 0.9)])
        let onceB = rounds.allSatisfy { r in [r.queued, r.spoolOnly].allSatisfy { $0.delivered == devices && $0.distinct == devices && $0.lines == devices } }
        row(["same: CPU per push, host / PostgreSQL", us(median(rounds.map { $0.queued.hostCPU / Double(devices) * 1e6 })) + " / "
                + us(median(rounds.map { $0.queued.postgresCPU / Double(devices) * 1e6 })),
             "spool-only " + us(median(rounds.map { $0.spoolOnly.hostCPU / Double(devices) * 1e6 })) + " / "
                + us(median(rounds.map { $0.spoolOnly.postgresCPU / Double(devices) * 1e6 })), "", "every device once", yes(onceB)])

        let held = median(rounds.map { $0.oneHost.rate / $0.spoolOnlyHeld.rate })
        row(["one host, nginx answering after 100 ms, concurrency \(concurrency): through the queue vs spool-only",
             rate(median(rounds.map(\.oneHost.rate))), "spool-only " + rate(median(rounds.map(\.spoolOnlyHeld.rate))), ratio(held), "≥ 0.9×",
             yes(held >= 0.9)])

        let bound = Double(takeoverLease + 5)
        let last = median(rounds.map(\.takeover.last))
        let worstTakeover = rounds.map(\.takeover.last).max() ?? .nan
        row(["takeover: 3 hosts, lease \(takeoverLease) s, chunks of \(takeoverChunk), kill -9 of one holding chunks: until the last of them is claimed elsewhere",
             String(format: "%.1f s (worst %.1f s)", last, worstTakeover),
             String(format: "first %.1f s; its leases had %.1f s left", median(rounds.map(\.takeover.first)), median(rounds.map(\.takeover.leaseLeft))),
             "", String(format: "≤ %.0f s", bound), yes(worstTakeover <= bound)])
        let t = rounds.map(\.takeover).min { $0.job.distinct < $1.job.distinct }!
        let maxDup = rounds.compactMap(\.takeover.job.duplicates).max() ?? -1
        let takeoverOnce = rounds.allSatisfy { $0.takeover.job.delivered == devices && $0.takeover.job.distinct == devices }
        row(["same: delivered / distinct / duplicates at nginx (worst run); chunks it held",
             "\(t.job.delivered) / \(t.job.distinct) / \(maxDup); \(t.held)", "", "",
             "\(devices) / \(devices) / ≤ \(concurrency)", yes(takeoverOnce && maxDup >= 0 && maxDup <= concurrency)])

        // The capacity model's inputs, measured: per 100k pushes, and per chunk.
        for (label, sent) in [("3 hosts, 100 ms", rounds.last!.threeHosts), ("1 host, fixed 200", rounds.last!.queued)] {
            let d = sent.database, per = 100_000 / Double(devices)
            let chunks = max(1, sent.chunksByHost.reduce(0, +))
            row(["PostgreSQL per 100k pushes (\(label), last run): commits / statements / NOTIFYs / WAL",
                 String(format: "%.0f / %.0f / %.0f / %.1f MB", Double(d.commits) * per, Double(d.statements) * per, Double(d.notifies) * per,
                        Double(d.walBytes) * per / 1_048_576),
                 String(format: "per chunk: %.1f outcome inserts, %.1f claims, %.1f completes, %.1f cut queries",
                        Double(d.calls("record")) / Double(chunks), Double(d.calls("claim")) / Double(chunks),
                        Double(d.calls("complete")) / Double(chunks), Double(d.calls("cut")) / Double(chunks)), "", "", ""])
            FileHandle.standardError.write(Data("statements, \(label) (\(chunks) chunks, \(devices) pushes, \(String(format: "%.1f", sent.seconds)) s):\n\(d.listing)\n".utf8))
        }
    }
}

extension QueueRound {
    /// The overhead pair alone, R rounds (odd ones in the other order), with PostgreSQL's
    /// statements for the queued job on standard error.
    static func printOverhead(_ bench: QueueBench, devices: Int, runs: Int) throws {
        var pairs: [(queued: Sent, spoolOnly: Sent)] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("queue overhead run \(i + 1)/\(runs)…\n".utf8))
            pairs.append(try bench.overheadPair(i))
            let (q, s) = pairs.last!
            FileHandle.standardError.write(Data(String(format: "run %d: %.0f/s vs spool-only %.0f/s: %.3f×\n", i + 1, q.rate, s.rate, q.rate / s.rate).utf8))
            FileHandle.standardError.write(Data("statements, queued (\(String(format: "%.1f", q.seconds)) s):\n\(q.database.listing)\n".utf8))
        }
        func us(_ x: Double, _ n: Int) -> String { String(format: "%.1f µs", x / Double(n) * 1e6) }
        let cost = median(pairs.map { $0.queued.rate / $0.spoolOnly.rate })
        row(["one host, nginx fixed 200, \(devices) devices: through the queue vs spool-only", rate(median(pairs.map(\.queued.rate))),
             "spool-only " + rate(median(pairs.map(\.spoolOnly.rate))), String(format: "%.2f×", cost), "≥ 0.9×", cost >= 0.9 ? "yes" : "no"])
        let once = pairs.allSatisfy { p in [p.queued, p.spoolOnly].allSatisfy { $0.delivered == devices && $0.distinct == devices && $0.lines == devices } }
        row(["same: CPU per push, host / PostgreSQL", us(median(pairs.map(\.queued.hostCPU)), devices) + " / " + us(median(pairs.map(\.queued.postgresCPU)), devices),
             "spool-only " + us(median(pairs.map(\.spoolOnly.hostCPU)), devices) + " / " + us(median(pairs.map(\.spoolOnly.postgresCPU)), devices),
             "", "every device once", once ? "yes" : "no"])
    }
}

/// What PostgreSQL counted during one job.
struct DatabaseCounts {
    var commits = 0
    var walBytes = 0
    /// pg_stat_statements: calls by statement (whitespace folded), the bench's own left out.
    var byStatement: [(calls: Int, milliseconds: Double, query: String)] = []

    var statements: Int { byStatement.reduce(0) { $0 + $1.calls } }
    var notifies: Int { byStatement.filter { $0.query.contains("pg_notify") }.reduce(0) { $0 + $1.calls } }

    /// The queue's statements by role (what PostgresJobQueue and chunkEnd send).
    static let roles: [(String, String)] = [
        ("claim", "UPDATE queue_chunks q SET host"),
        ("record", "INSERT INTO queue_outcomes"),
        ("complete", "UPDATE queue_chunks SET done = $5, lease_until = $6"),
        ("lines", "SELECT lines FROM queue_outcomes"),
        ("cut", "SELECT max(seq) FROM"),
        ("addChunk", "UPDATE queue_jobs SET cut_after"),
        ("renew", "UPDATE queue_chunks SET lease_until"),
        ("progress", "SELECT j.cut_done, j.control"),
        ("markApplied", "UPDATE queue_chunks SET applied"),
        ("release", "UPDATE queue_chunks SET host = NULL"),
    ]

    func calls(_ role: String) -> Int {
        guard let needle = Self.roles.first(where: { $0.0 == role })?.1 else { return 0 }
        return byStatement.filter { $0.query.contains(needle) }.reduce(0) { $0 + $1.calls }
    }

    var listing: String {
        byStatement.prefix(25).map { String(format: "%8d %8.0f ms  ", $0.calls, $0.milliseconds) + String($0.query.prefix(100)) }.joined(separator: "\n")
            + String(format: "\n%8d  commits (pg_stat_database), %.1f MB WAL", commits, Double(walBytes) / 1_048_576)
    }
}

/// The rounds' shared setup: the cluster, the devices, the nginx pair, three hosts' spools.
final class QueueBench {
    let dir: URL
    let postgres: BenchPostgres
    let setup: BenchAPNs
    let held: Nginx
    let fixed: Nginx
    let devices: Int
    let concurrency: Int
    let hosts: [QueueHost]
    var env: [String: String] { ["PUSHSPOOL_BENCH_REGISTRY": postgres.uri] }
    private var jobs = 0

    init(devices: Int, concurrency: Int) throws {
        self.devices = devices
        self.concurrency = concurrency
        dir = try BenchPaths.scratch("pushspool-bench-queue")
        guard FileManager.default.fileExists(atPath: NginxRound.echoModule) else {
            throw BenchError(description: "nginx's echo module is not installed (apt-get install libnginx-mod-http-echo)")
        }
        postgres = try BenchPostgres(dir: dir.appendingPathComponent("pg"))
        setup = try BenchAPNs(dir: dir, devices: devices)
        let nginx = try Nginx.binary()
        held = try Nginx(binary: nginx, dir: dir.appendingPathComponent("nginx-held"), listenOptions: "ssl http2", modules: [NginxRound.echoModule],
                         http: NginxRound.tls + "\nlog_format uris '$request_uri';",
                         server: "location /3/device/ { access_log \(dir.path)/nginx-held/uris.log uris buffer=256k; echo_sleep 0.1; echo ok; }")
        do { fixed = try NginxRound.fixed(nginx, dir: dir) } catch { held.stop(); throw error }
        let scratch = dir
        hosts = ["a", "b", "c"].map { QueueHost(name: $0, dir: scratch) }
    }

    /// Each host's spool, the registry's schema, the devices imported once.
    func prepare() throws {
        for host in hosts {
            try host.configure("init", json: config(host, port: fixed.port, queue: #"{"enabled": true}"#))
            let r = try measure(setup.binary, ["init", "--config", host.config("init")], env: env)
            guard r.status == 0 else { throw BenchError(description: "init of host \(host.name) failed: \(r.stderr)") }
        }
        FileHandle.standardError.write(Data("importing \(devices) devices into PostgreSQL…\n".utf8))
        let imported = try measure(setup.binary, ["import", "--config", hosts[0].config("init"), setup.devicesFile.path], env: env)
        guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
    }

    func close() {
        for host in hosts { host.stop() }
        held.stop()
        fixed.stop()
        postgres.stop()
        try? FileManager.default.removeItem(at: dir)
    }

    private func config(_ host: QueueHost, port: Int, queue: String) -> String {
        """
        {"spool": "\(host.spool.path)", "registry": "env:PUSHSPOOL_BENCH_REGISTRY", "concurrency": \(concurrency),
         "routes": {"apns": "apns"}, "queue": \(queue),
         "providers": {"apns": {"team_id": "TEAMID1234", "key_id": "TESTKEY123", "key_file": "\(setup.key)",
                                "topic": "com.example.app", "environment": "production", "endpoint": "https://127.0.0.1:\(port)"}},
         "tls": {"ca_file": "\(setup.ca)"}}
        """
    }

    /// One round: the scaling pair, the overhead pair, the takeover; odd rounds take each pair
    /// in the other order (the machine's load drifts).
    func round(_ i: Int) throws -> QueueRound {
        for host in hosts { try host.configure("scaling", json: config(host, port: held.port, queue: Self.scaling)) }
        try configureOverhead()
        let takeover = #"{"enabled": true, "chunk_size": \#(QueueRound.takeoverChunk), "lease_seconds": \#(QueueRound.takeoverLease), "max_chunks": 4}"#
        for host in hosts { try host.configure("takeover", json: config(host, port: held.port, queue: takeover)) }

        try hosts[0].configure("spool-only-held", json: config(hosts[0], port: held.port, queue: #"{"enabled": false}"#))
        let pairs: [(String, [QueueHost], Bool)] = [("scaling", [hosts[0]], true), ("scaling", hosts, true),
                                                    ("queued", [hosts[0]], false), ("spool-only", [hosts[0]], false),
                                                    ("spool-only-held", [hosts[0]], true)]
        var sent: [Int: QueueRound.Sent] = [:]
        for k in (i % 2 == 0 ? [0, 1, 2, 3, 4] : [4, 1, 0, 3, 2]) { sent[k] = try send(on: pairs[k].1, pairs[k].0, logged: pairs[k].2) }
        return QueueRound(oneHost: sent[0]!, threeHosts: sent[1]!, queued: sent[2]!, spoolOnly: sent[3]!, spoolOnlyHeld: sent[4]!,
                          takeover: try takeOver())
    }

    /// The queue settings of the scaling and overhead jobs.
    static let scaling = #"{"enabled": true, "chunk_size": \#(QueueRound.chunkSize), "lease_seconds": 30, "max_chunks": 4}"#

    /// Host a through the queue and spool-only, both against nginx's fixed 200.
    private func configureOverhead() throws {
        try hosts[0].configure("queued", json: config(hosts[0], port: fixed.port, queue: Self.scaling))
        try hosts[0].configure("spool-only", json: config(hosts[0], port: fixed.port, queue: #"{"enabled": false}"#))
    }

    /// The overhead pair alone (`--overhead-only`).
    func overheadPair(_ i: Int) throws -> (queued: QueueRound.Sent, spoolOnly: QueueRound.Sent) {
        try configureOverhead()
        if i % 2 == 1 {
            let s = try send(on: [hosts[0]], "spool-only", logged: false)
            return (try send(on: [hosts[0]], "queued", logged: false), s)
        }
        let q = try send(on: [hosts[0]], "queued", logged: false)
        return (q, try send(on: [hosts[0]], "spool-only", logged: false))
    }

    /// Starts `running` with the configuration `scenario`, drops one job to the whole audience on
    /// the first, waits for its summary there; `logged`: the job went to `held` (its access log read).
    private func send(on running: [QueueHost], _ scenario: String, logged: Bool,
                      during: ((String) throws -> Void)? = nil) throws -> QueueRound.Sent {
        for host in running { try host.start(scenario, env: env) }
        defer { for host in running { host.stop() } }
        Thread.sleep(forTimeInterval: 1.5)    // connected, listening
        jobs += 1
        let id = "\(scenario)-\(running.count)-\(jobs)"
        _ = try postgres.query("SELECT pg_stat_statements_reset(), pg_stat_reset(), pg_stat_reset_shared('wal')")
        let commits0 = try postgres.commits()
        let cpu0 = running.map(\.cpuSeconds).reduce(0, +), pg0 = postgres.cpuSeconds
        let start = Date()
        try BenchJob.drop(#"{"id": "\#(id)", "to_tag": "bench", "pns": ["apns"], "message": "hello", "from": "bench"}"#, spool: running[0].spool.path)
        try during?(id)
        let log = running[0].spool.appendingPathComponent("results/\(id).jsonl")
        let timeout = max(120, Double(devices) / 500)
        while !Self.hasSummary(log) {
            if Date().timeIntervalSince(start) > timeout {
                throw BenchError(description: "job \(id) did not end within \(Int(timeout)) s; host a: \(running[0].stderrTail)")
            }
            if let dead = running.first(where: { !$0.isRunning && !$0.killed }) {
                throw BenchError(description: "host \(dead.name) exited: \(dead.stderrTail)")
            }
            usleep(20_000)
        }
        let seconds = Date().timeIntervalSince(start)
        Thread.sleep(forTimeInterval: 1.5)    // the backends report their statistics within a second
        let hostCPU = running.map(\.cpuSeconds).reduce(0, +) - cpu0, pgCPU = postgres.cpuSeconds - pg0
        var database = try postgres.counts()
        database.commits = try postgres.commits() - commits0
        let shares = try postgres.query("SELECT count(*) FROM queue_chunks WHERE job = '\(id)' AND done GROUP BY host")
            .compactMap { Int($0[0]) }.sorted(by: >)
        let read = try Self.read(log)
        return QueueRound.Sent(seconds: seconds, devices: devices, delivered: read.delivered, distinct: read.distinct, lines: read.lines,
                               hostCPU: hostCPU, postgresCPU: pgCPU, chunksByHost: shares,
                               served: logged ? try served() : nil, database: database)
    }

    /// Three hosts on the takeover settings; host c killed once it has held chunks for a second.
    private func takeOver() throws -> QueueRound.Takeover {
        let victim = hosts[2]
        var held: [String] = [], first = Double.nan, last = Double.nan, leaseLeft = Double.nan
        let job = try send(on: hosts, "takeover", logged: true) { [postgres] id in
            let mine = "job = '\(id)' AND NOT done AND host LIKE '%/\(victim.pid)'"
            let deadline = Date().addingTimeInterval(60)
            while try postgres.query("SELECT count(*) FROM queue_chunks WHERE \(mine)").first?.first ?? "0" == "0" {
                guard Date() < deadline else { throw BenchError(description: "host c never held a chunk of \(id)") }
                usleep(100_000)
            }
            Thread.sleep(forTimeInterval: 1)
            victim.kill9()
            let killed = Date()
            // What it held when it died: frozen from here on.
            let rows = try postgres.query("SELECT chunk, extract(epoch from lease_until - clock_timestamp()) FROM queue_chunks WHERE \(mine)")
            held = rows.map { $0[0] }
            leaseLeft = rows.compactMap { Double($0[1]) }.max() ?? .nan
            guard !held.isEmpty else { throw BenchError(description: "host c held no chunk when it was killed") }
            let taken = "job = '\(id)' AND chunk IN (\(held.joined(separator: ","))) AND (done OR coalesce(host, '') NOT LIKE '%/\(victim.pid)')"
            while Date().timeIntervalSince(killed) < 120 {
                let n = Int(try postgres.query("SELECT count(*) FROM queue_chunks WHERE \(taken)").first?.first ?? "0") ?? 0
                let now = Date().timeIntervalSince(killed)
                if n > 0, first.isNaN { first = now }
                if n == held.count { last = now; break }
                usleep(100_000)
            }
        }
        return QueueRound.Takeover(job: job, held: held.count, first: first, last: last, leaseLeft: leaseLeft)
    }

    /// nginx's access log since the last call: requests, distinct device URIs (the log is renamed,
    /// then nginx told to reopen it, which flushes its buffer into the renamed file).
    private func served() throws -> (requests: Int, uris: Int) {
        let log = held.dir.appendingPathComponent("uris.log"), taken = held.dir.appendingPathComponent("uris-\(jobs).log")
        guard rename(log.path, taken.path) == 0 else { return (0, 0) }
        kill(held.process.processIdentifier, SIGUSR1)
        usleep(500_000)
        defer { try? FileManager.default.removeItem(at: taken) }
        let text = try String(contentsOf: taken, encoding: .utf8)
        var requests = 0
        var uris = Set<Substring>()
        for line in text.split(separator: "\n") {
            requests += 1
            uris.insert(line)
        }
        return (requests, uris.count)
    }

    /// Whether the log's last line is its summary (only its tail is read).
    static func hasSummary(_ log: URL) -> Bool {
        guard let h = try? FileHandle(forReadingFrom: log) else { return false }
        defer { try? h.close() }
        guard let end = try? h.seekToEnd(), end > 0 else { return false }
        try? h.seek(toOffset: end > 4096 ? end - 4096 : 0)
        let tail = String(decoding: (try? h.readToEnd()) ?? Data(), as: UTF8.self)
        return tail.contains(#""type":"summary""#)
    }

    /// Delivery lines, those delivered, distinct devices among them.
    static func read(_ log: URL) throws -> (lines: Int, delivered: Int, distinct: Int) {
        let text = try String(contentsOf: log, encoding: .utf8)
        var lines = 0, delivered = 0
        var seen = Set<Substring>()
        for line in text.split(separator: "\n") where line.contains(#""type":"delivery""#) {
            lines += 1
            if line.contains(#""status":"delivered""#) { delivered += 1 }
            guard let r = line.range(of: #""device":""#) else { continue }
            let rest = line[r.upperBound...]
            seen.insert(rest[..<(rest.firstIndex(of: "\"") ?? rest.endIndex)])
        }
        return (lines, delivered, seen.count)
    }
}

/// One `pushspool run` host: a spool of its own, a configuration per scenario.
final class QueueHost {
    let name: String
    let spool: URL
    private let dir: URL
    private var process: Process?
    private(set) var killed = false

    init(name: String, dir: URL) {
        self.name = name
        self.dir = dir
        spool = dir.appendingPathComponent("host-\(name)")
    }

    func config(_ scenario: String) -> String { dir.appendingPathComponent("\(scenario)-\(name).json").path }

    func configure(_ scenario: String, json: String) throws {
        try json.write(toFile: config(scenario), atomically: true, encoding: .utf8)
    }

    private var stderrFile: URL { dir.appendingPathComponent("run-\(name).log") }

    func start(_ scenario: String, env: [String: String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try BenchPaths.releaseBinary())
        p.arguments = ["run", "--log-format", "logfmt", "--log-level", "warning", "--config", config(scenario)]
        p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
        guard FileManager.default.createFile(atPath: stderrFile.path, contents: nil) else {
            throw BenchError(description: "cannot create \(stderrFile.path)")
        }
        p.standardError = try FileHandle(forWritingTo: stderrFile)
        p.standardOutput = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        process = p
        killed = false
    }

    var pid: Int32 { process?.processIdentifier ?? -1 }
    var isRunning: Bool { process?.isRunning ?? false }
    var cpuSeconds: Double { process.map { processCPUSeconds($0.processIdentifier) } ?? 0 }
    var stderrTail: String { String(((try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "").suffix(800)) }

    func stop() {
        guard let p = process else { return }
        if p.isRunning { p.terminate() }
        p.waitUntilExit()
        process = nil
    }

    func kill9() {
        guard let p = process else { return }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        killed = true
    }
}

/// A throwaway PostgreSQL cluster of the bench's own: `initdb` into `dir`, the server on a Unix
/// socket there (no TCP), as `postgres` when the bench runs as root (the server refuses root).
/// The server runs under a small shell that stops it when its stdin closes, so it never outlives
/// the bench. Settings: the defaults (fsync and synchronous commit on), `pg_stat_statements`.
final class BenchPostgres {
    let dir: URL
    let uri: String
    private let shell = Process()
    private let input = Pipe()
    private let psql: String

    init(dir: URL) throws {
        let fm = FileManager.default
        let versions = ((try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).compactMap(Int.init).sorted()
        guard let bin = versions.reversed().map({ "/usr/lib/postgresql/\($0)/bin" }).first(where: { fm.isExecutableFile(atPath: $0 + "/initdb") })
                ?? which("initdb").map({ URL(fileURLWithPath: $0).deletingLastPathComponent().path }) else {
            throw BenchError(description: "no PostgreSQL server binaries (initdb) found (apt-get install postgresql)")
        }
        guard let psql = which("psql") ?? (fm.isExecutableFile(atPath: bin + "/psql") ? bin + "/psql" : nil) else {
            throw BenchError(description: "psql not found (apt-get install postgresql-client)")
        }
        self.psql = psql
        self.dir = dir
        try fm.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let owner: String? = getuid() == 0 ? ["postgres", "pushspool-test", "nobody"].first { getpwnam($0) != nil } : nil
        if getuid() == 0 {
            guard let owner, let pw = getpwnam(owner), chown(dir.path, pw.pointee.pw_uid, pw.pointee.pw_gid) == 0 else {
                throw BenchError(description: "running as root with no unprivileged user to own \(dir.path)")
            }
            // The user must be able to reach its folder through the bench's scratch folder.
            chmod(dir.deletingLastPathComponent().path, 0o711)
        }
        func asOwner(_ argv: [String]) -> [String] { owner.map { ["/usr/sbin/runuser", "-u", $0, "--"] + argv } ?? argv }
        let initdb = asOwner(["\(bin)/initdb", "-D", dir.path + "/data", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C"])
        let made = try measure(initdb[0], Array(initdb.dropFirst()))
        guard made.status == 0 else { throw BenchError(description: "initdb failed: \(made.stderr.suffix(400)) \(made.stdout.suffix(400))") }
        let d = dir.path
        let server = "\(bin)/postgres -D \(d)/data -k \(d) -c listen_addresses= -c max_connections=200 "
            + "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all -c log_min_messages=warning"
        let script = "\(server) >\(d)/log 2>&1 & pid=$!; cat >/dev/null; kill -INT $pid; wait $pid"
        let argv = asOwner(["/bin/sh", "-c", script])
        shell.executableURL = URL(fileURLWithPath: argv[0])
        shell.arguments = Array(argv.dropFirst())
        shell.standardInput = input
        shell.standardOutput = FileHandle.nullDevice
        shell.standardError = FileHandle.nullDevice
        try shell.run()
        let admin = "postgresql:///postgres?host=\(d)&user=postgres"
        uri = "postgresql:///pushspool?host=\(d)&user=postgres"
        let deadline = Date().addingTimeInterval(30)
        while try measure(psql, ["-X", "-q", admin, "-c", "SELECT 1"]).status != 0 {
            guard Date() < deadline, shell.isRunning else {
                throw BenchError(description: "PostgreSQL did not start: \(((try? String(contentsOfFile: d + "/log", encoding: .utf8)) ?? "").suffix(500))")
            }
            usleep(100_000)
        }
        let created = try measure(psql, ["-X", "-q", admin, "-c", "CREATE DATABASE pushspool"])
        guard created.status == 0 else { throw BenchError(description: "CREATE DATABASE: \(created.stderr)") }
        _ = try query("CREATE EXTENSION pg_stat_statements")
    }

    /// Rows of one statement, fields as text.
    func query(_ sql: String) throws -> [[String]] {
        let r = try measure(psql, ["-X", "-A", "-t", "-q", "-F", "\u{1F}", "-v", "ON_ERROR_STOP=1", uri, "-c", sql])
        guard r.status == 0 else { throw BenchError(description: "psql: \(r.stderr.suffix(300)) (\(sql.prefix(80)))") }
        return r.stdout.split(separator: "\n").map { $0.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init) }
    }

    func commits() throws -> Int {
        Int(try query("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").first?.first ?? "") ?? 0
    }

    /// The statements since the last reset, and the WAL written (commits are the caller's).
    func counts() throws -> DatabaseCounts {
        var c = DatabaseCounts()
        c.walBytes = Int(Double(try query("SELECT wal_bytes FROM pg_stat_wal").first?.first ?? "") ?? 0)
        c.byStatement = try query("""
            SELECT calls, total_exec_time, regexp_replace(query, '\\s+', ' ', 'g') FROM pg_stat_statements
            WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND query NOT LIKE '%pg_stat%' AND query NOT LIKE '%queue_chunks WHERE job = %AND done GROUP BY host%'
            ORDER BY calls DESC
            """).compactMap { r in r.count == 3 ? Int(r[0]).map { ($0, Double(r[1]) ?? 0, r[2]) } : nil }
        return c
    }

    /// CPU seconds of the server and every backend (its children), those gone included.
    var cpuSeconds: Double {
        guard let text = try? String(contentsOfFile: dir.path + "/data/postmaster.pid", encoding: .utf8),
              let pid = text.split(separator: "\n").first.flatMap({ Int32($0) }) else { return 0 }
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        return Self.cpu(pid, reaped: true) + children.split(separator: " ").compactMap { Int32($0) }.map { Self.cpu($0, reaped: false) }.reduce(0, +)
    }

    /// utime + stime (+ cutime + cstime: children it reaped) from /proc.
    private static func cpu(_ pid: Int32, reaped: Bool) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return 0 }
        // After the name: state, ppid, … utime (11), stime, cutime, cstime.
        let f = stat[stat.index(after: close)...].split(separator: " ")
        guard f.count > 14 else { return 0 }
        let ticks = (reaped ? 11...14 : 11...12).map { Double(f[$0]) ?? 0 }.reduce(0, +)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        shell.waitUntilExit()
    }
}
