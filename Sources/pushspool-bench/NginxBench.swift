import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// APNs-shaped load against nginx, a server that is not the bottleneck (unlike the single-threaded
/// Node fake): one worker, TLS with the test CA's certificate, HTTP/2 with 1,000 streams per
/// connection, keep-alive unlimited, a fixed 200 for every `POST /3/device/…`. nginx verifies
/// nothing, so every device exactly once is read from pushspool's result log (and, in the latency
/// run, from nginx's access log: one line per request with its URI, connection and the last
/// characters of its bearer token, never the token itself).
///
/// Every rate is N over a whole process's wall time (`wait4`), h2load's included.
///
/// - Throughput: N pushes by `pushspool run --once` (the whole process), by Node's http2 client
///   (`peer-node-client.js`, one session) and by h2load (`-c 1`), the same streams in flight.
/// - Latency: every answer held 100 ms (the echo module's `echo_sleep`), N devices with
///   `concurrency` C against `h2load -c 4 -m 1000`: streams, not CPU, are the limit.
struct NginxRound {
    struct Client {
        var rate: Double
        var cpuMicrosPerPush: Double
        var peakRSS: Int = 0
        /// nginx's own CPU per request while serving this client.
        var serverMicrosPerPush: Double = 0
    }
    struct Campaign {
        var client: Client
        /// Delivery lines with status delivered, distinct devices among them, lines in all.
        var delivered: Int
        var distinct: Int
        var lines: Int
        /// From nginx's access log (latency run only): requests, distinct URIs, bearer tokens, connections.
        var served: (requests: Int, uris: Int, tokens: Int, connections: Int)?
    }

    var pushspool: Campaign
    var node: Client?
    var h2load: Client
    var latency: Campaign
    var latencyH2load: Client

    static let echoModule = "/usr/lib/nginx/modules/ngx_http_echo_module.so"

    /// TLS with the test CA's certificate, 1,000 streams per HTTP/2 connection.
    static let tls = """
        ssl_certificate \(BenchPaths.fixtures.appendingPathComponent("server.pem").path);
        ssl_certificate_key \(BenchPaths.fixtures.appendingPathComponent("server-key.pem").path);
        http2_max_concurrent_streams 1000;
        """

    /// nginx answering every `POST /3/device/…` with a fixed 200.
    static func fixed(_ binary: String, dir: URL) throws -> Nginx {
        try Nginx(binary: binary, dir: dir.appendingPathComponent("nginx-fixed"), listenOptions: "ssl http2",
                  http: tls, server: "location /3/device/ { return 200; }")
    }

    static func run(count: Int, concurrency: Int, latencyCount: Int, latencyConcurrency: Int) throws -> NginxRound {
        let nginxBinary = try Nginx.binary()
        guard let h2load = which("h2load") else { throw BenchError(description: "h2load is not installed (apt-get install nghttp2-client)") }
        guard FileManager.default.fileExists(atPath: echoModule) else {
            throw BenchError(description: "nginx's echo module is not installed (apt-get install libnginx-mod-http-echo)")
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pushspool-bench-nginx-\(getpid())")
        try? FileManager.default.removeItem(at: dir)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: dir) }
        let setup = try BenchAPNs(dir: dir, devices: max(count, latencyCount))

        let tls = Self.tls

        // Throughput: a fixed 200.
        let fixed = try Self.fixed(nginxBinary, dir: dir)
        defer { fixed.stop() }
        let worker = fixed.workerPID()
        let ours = try setup.campaign(name: "fixed", port: fixed.port, count: count, concurrency: concurrency, serverPID: worker)
        var node: Client?
        if let nodeBinary = which("node") {
            let cpu0 = processCPUSeconds(worker)
            let m = try measure(nodeBinary, [BenchPaths.peer.path, "--port", String(fixed.port), "--count", String(count),
                                             "--concurrency", String(concurrency), "--ca", setup.ca, "--key", setup.key,
                                             "--team-id", "TEAMID1234", "--key-id", "TESTKEY123", "--topic", "com.example.app",
                                             "--payload", APNsRound.payload])
            let result = (try? JSONSerialization.jsonObject(with: Data(m.stdout.utf8)) as? [String: Any]) ?? [:]
            guard result["ok"] as? Int == count else { throw BenchError(description: "node peer: \(m.stdout) \(m.stderr.suffix(300))") }
            node = Client(rate: Double(count) / m.seconds, cpuMicrosPerPush: m.cpuSeconds / Double(count) * 1e6, peakRSS: m.peakRSS,
                          serverMicrosPerPush: (processCPUSeconds(worker) - cpu0) / Double(count) * 1e6)
        }
        let ceiling = try setup.h2load(h2load, port: fixed.port, count: count, connections: 1, streams: concurrency, serverPID: worker)

        // Latency: every answer 100 ms late; the access log says what nginx was sent.
        let held = try Nginx(binary: nginxBinary, dir: dir.appendingPathComponent("nginx-held"), listenOptions: "ssl http2",
                             modules: [echoModule],
                             http: tls + """

                                 map $http_authorization $token_tail { default "-"; "~(?<t>.{12})$" $t; }
                                 log_format served '$connection $token_tail $request_uri';
                                 """,
                             server: """
                                 location /3/device/ { access_log \(dir.path)/nginx-held/served.log served buffer=256k; echo_sleep 0.1; echo ok; }
                                 """)
        defer { held.stop() }
        let log = held.dir.appendingPathComponent("served.log")
        var slow = try setup.campaign(name: "held", port: held.port, count: latencyCount, concurrency: latencyConcurrency,
                                      serverPID: held.workerPID())
        slow.served = try Self.served(log, nginx: held)
        try? FileManager.default.removeItem(at: log)
        let slowCeiling = try setup.h2load(h2load, port: held.port, count: latencyCount, connections: 4, streams: 1000,
                                           serverPID: held.workerPID())
        return NginxRound(pushspool: ours, node: node, h2load: ceiling, latency: slow, latencyH2load: slowCeiling)
    }

    /// Reads nginx's access log once it is flushed (nginx writes its buffer on reopen, USR1).
    static func served(_ log: URL, nginx: Nginx) throws -> (requests: Int, uris: Int, tokens: Int, connections: Int) {
        kill(nginx.process.processIdentifier, SIGUSR1)
        usleep(300_000)
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        var uris = Set<Substring>(), tokens = Set<Substring>(), connections = Set<Substring>()
        var requests = 0
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count == 3 else { continue }
            requests += 1
            connections.insert(f[0])
            tokens.insert(f[1])
            uris.insert(f[2])
        }
        return (requests, uris.count, tokens.count, connections.count)
    }

    static func printRows(count: Int, concurrency: Int, latencyCount: Int, latencyConcurrency: Int, runs: Int) throws {
        var rounds: [NginxRound] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("nginx run \(i + 1)/\(runs)…\n".utf8))
            rounds.append(try run(count: count, concurrency: concurrency, latencyCount: latencyCount, latencyConcurrency: latencyConcurrency))
        }
        func us(_ x: Double) -> String { String(format: "%.1f µs", x) }
        func ratio(_ x: Double) -> String { String(format: "%.2f×", x) }
        let ours = median(rounds.map { $0.pushspool.client.rate })
        if rounds.allSatisfy({ $0.node != nil }) {
            let vsNode = median(rounds.map { $0.pushspool.client.rate / $0.node!.rate })
            row(["nginx, \(count) pushes, \(concurrency) streams: rate (whole process)", rate(ours),
                 "node http2 \(rate(median(rounds.map { $0.node!.rate })))", ratio(vsNode), "≥ 4× node", vsNode >= 4 ? "yes" : "no"])
        }
        let vsH2 = median(rounds.map { $0.pushspool.client.rate / $0.h2load.rate })
        row(["same, against h2load -c 1 -m \(concurrency)", rate(ours), "h2load \(rate(median(rounds.map { $0.h2load.rate })))",
             ratio(vsH2), "≥ 0.6× h2load", vsH2 >= 0.6 ? "yes" : "no"])
        let cpu = median(rounds.map { $0.pushspool.client.cpuMicrosPerPush / $0.h2load.cpuMicrosPerPush })
        let nodeCPU = rounds.allSatisfy { $0.node != nil } ? ", node " + us(median(rounds.map { $0.node!.cpuMicrosPerPush })) : ""
        row(["CPU per push (whole process)", us(median(rounds.map { $0.pushspool.client.cpuMicrosPerPush })),
             "h2load " + us(median(rounds.map { $0.h2load.cpuMicrosPerPush })) + nodeCPU, ratio(cpu), "≤ 2.5× h2load", cpu <= 2.5 ? "yes" : "no"])
        let nodeServer = rounds.allSatisfy { $0.node != nil } ? ", for node " + us(median(rounds.map { $0.node!.serverMicrosPerPush })) : ""
        row(["nginx's own CPU per request", us(median(rounds.map { $0.pushspool.client.serverMicrosPerPush })),
             "for h2load " + us(median(rounds.map { $0.h2load.serverMicrosPerPush })) + nodeServer, "", "", ""])
        let nodeRSS = rounds.allSatisfy { $0.node != nil } ? "node " + mb(median(rounds.map { Double($0.node!.peakRSS) })) + ", " : ""
        row(["peak RSS", mb(median(rounds.map { Double($0.pushspool.client.peakRSS) })),
             nodeRSS + "h2load " + mb(median(rounds.map { Double($0.h2load.peakRSS) })), "", "", ""])
        let worst = rounds.map(\.pushspool).min { $0.distinct < $1.distinct }!
        let once = rounds.allSatisfy { $0.pushspool.delivered == count && $0.pushspool.distinct == count && $0.pushspool.lines == count }
        row(["delivered / distinct devices / result lines (worst run)", "\(worst.delivered) / \(worst.distinct) / \(worst.lines)", "", "",
             "\(count) each", once ? "yes" : "no"])

        let slow = median(rounds.map { $0.latency.client.rate })
        let vsSlow = median(rounds.map { $0.latency.client.rate / $0.latencyH2load.rate })
        row(["nginx answering after 100 ms, \(latencyCount) devices, concurrency \(latencyConcurrency): rate", rate(slow),
             "h2load -c 4 -m 1000 \(rate(median(rounds.map { $0.latencyH2load.rate })))", ratio(vsSlow), "≥ 0.9× h2load", vsSlow >= 0.9 ? "yes" : "no"])
        let l = rounds.map(\.latency).min { $0.distinct < $1.distinct }!
        let s = l.served ?? (-1, -1, -1, -1)
        let slowOnce = rounds.allSatisfy { r in
            r.latency.delivered == latencyCount && r.latency.distinct == latencyCount && r.latency.lines == latencyCount
                && r.latency.served.map { $0.requests == latencyCount && $0.uris == latencyCount && $0.tokens == 1 } == true
        }
        row(["result log delivered / distinct; nginx requests / distinct URIs / JWTs / connections (worst run)",
             "\(l.delivered) / \(l.distinct); \(s.requests) / \(s.uris) / \(s.tokens) / \(s.connections)", "", "",
             "\(latencyCount) each, 1 JWT", slowOnce ? "yes" : "no"])
        row(["CPU per push with 100 ms answers", us(median(rounds.map { $0.latency.client.cpuMicrosPerPush })),
             "h2load " + us(median(rounds.map { $0.latencyH2load.cpuMicrosPerPush })), "", "", ""])
    }
}

/// What the nginx runs share: the key, the CA, N devices as import lines, h2load's inputs.
struct BenchAPNs {
    let dir: URL
    let key: String
    let ca: String
    let devicesFile: URL
    let binary: String

    init(dir: URL, devices: Int) throws {
        self.dir = dir
        let keyURL = dir.appendingPathComponent("AuthKey_TESTKEY123.p8")
        try FileManager.default.copyItem(at: BenchPaths.fixtures.appendingPathComponent("AuthKey_TESTKEY123.p8"), to: keyURL)
        chmod(keyURL.path, 0o600)
        key = keyURL.path
        ca = BenchPaths.fixtures.appendingPathComponent("ca.pem").path
        binary = try BenchPaths.releaseBinary()
        var lines = ""
        lines.reserveCapacity(devices * 120)
        for i in 0..<devices { lines += #"{"id":"d\#(i)","platform":"apns","handle":"\#(String(format: "%064x", i))","tags":["bench"]}"# + "\n" }
        devicesFile = dir.appendingPathComponent("devices.jsonl")
        try lines.write(to: devicesFile, atomically: true, encoding: .utf8)
    }

    /// `init`, `import` of the first `count` devices, `submit` (or `job`, a job file with id
    /// `bench` to the tag `bench`, dropped into `incoming/`), then `pushspool run --once`
    /// measured; the result log read back.
    /// `apps` > 1: the devices spread round-robin over that many apps on the one APNs provider
    /// (each its own topic), and the job sent to every app (`"app": "*"`). `job`: a job file of
    /// the caller's instead of the submitted alert. `kinds`: the registry holds `count` tokens of
    /// each of these token kinds (the devices file's lines in that order), so the job's push type
    /// reaches its own kind's `count` among them (the registry's query keeps those).
    func campaign(name: String, port: Int, count: Int, concurrency: Int, serverPID: pid_t, apps: Int = 1,
                  job: String? = nil, kinds: [String] = []) throws -> NginxRound.Campaign {
        let config = dir.appendingPathComponent("\(name).json")
        let spool = dir.appendingPathComponent("spool-\(name)").path
        let appsSection = apps <= 1 ? "" : #""apps": {"# + (0..<apps).map { #""a\#($0)": {"apns_topic": "com.example.a\#($0)"}"# }
            .joined(separator: ", ") + #"}, "default_app": "a0","#
        try """
            {"spool": "spool-\(name)", "concurrency": \(concurrency), "routes": {"apns": "apns"}, \(appsSection)
             "providers": {"apns": {"team_id": "TEAMID1234", "key_id": "TESTKEY123", "key_file": "AuthKey_TESTKEY123.p8",
                                    "topic": "com.example.app", "environment": "production", "endpoint": "https://127.0.0.1:\(port)"}},
             "tls": {"ca_file": "\(ca)"}}
            """.write(to: config, atomically: true, encoding: .utf8)
        let common = ["--spool", spool, "--config", config.path]
        let devices = dir.appendingPathComponent("devices-\(count)-\(apps)-\(kinds.joined(separator: "-")).jsonl")
        if !FileManager.default.fileExists(atPath: devices.path) {
            let all = try String(contentsOf: devicesFile, encoding: .utf8)
            let lines = all.split(separator: "\n").prefix(count * max(1, kinds.count)).enumerated().map { i, line in
                if !kinds.isEmpty, kinds[i / count] != "device" { return String(line.dropLast()) + #","token_kind":"\#(kinds[i / count])"}"# }
                return apps <= 1 ? String(line) : String(line.dropLast()) + #","app":"a\#(i % apps)"}"#
            }
            try (lines.joined(separator: "\n") + "\n").write(to: devices, atomically: true, encoding: .utf8)
        }
        guard try measure(binary, ["init"] + common).status == 0 else { throw BenchError(description: "init failed") }
        let imported = try measure(binary, ["import"] + common + [devices.path])
        guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
        if let job {
            try BenchJob.drop(job, spool: spool)
        } else if apps <= 1 {
            let submitted = try measure(binary, ["submit"] + common + ["--to-tag", "bench", "--pns", "apns", "--message", "hello", "--from", "bench", "--id", "bench"])
            guard submitted.status == 0 else { throw BenchError(description: "submit failed: \(submitted.stderr)") }
        } else {
            try BenchJob.drop(#"{"id": "bench", "to_tag": "bench", "pns": ["apns"], "message": "hello", "from": "bench", "app": "*"}"#,
                              spool: spool)
        }
        let cpu0 = processCPUSeconds(serverPID)
        let run = try measure(binary, ["run", "--once"] + common)
        let server = (processCPUSeconds(serverPID) - cpu0) / Double(count) * 1e6
        guard run.status == 0 else { throw BenchError(description: "\(name) run failed (\(run.status)): \(run.stderr.suffix(500))") }
        // Every delivery line, its device and status, without a JSON tree per line.
        let log = try String(contentsOfFile: spool + "/results/bench.jsonl", encoding: .utf8)
        var delivered = 0, lines = 0
        var devicesSeen = Set<Substring>()
        for line in log.split(separator: "\n") where line.contains(#""type":"delivery""#) {
            lines += 1
            if line.contains(#""status":"delivered""#) { delivered += 1 }
            if let r = line.range(of: #""device":""#) {
                let rest = line[r.upperBound...]
                devicesSeen.insert(rest[..<(rest.firstIndex(of: "\"") ?? rest.endIndex)])
            }
        }
        try? FileManager.default.removeItem(atPath: spool)
        return NginxRound.Campaign(client: NginxRound.Client(rate: Double(count) / run.seconds, cpuMicrosPerPush: run.cpuSeconds / Double(count) * 1e6,
                                                             peakRSS: run.peakRSS, serverMicrosPerPush: server),
                                   delivered: delivered, distinct: devicesSeen.count, lines: lines, served: nil)
    }

    /// h2load with the same device URLs, headers, JWT and body.
    func h2load(_ h2load: String, port: Int, count: Int, connections: Int, streams: Int, serverPID: pid_t) throws -> NginxRound.Client {
        let body = dir.appendingPathComponent("payload.json")
        try APNsRound.payload.write(to: body, atomically: true, encoding: .utf8)
        guard let node = which("node") else { throw BenchError(description: "node is not on PATH (it signs h2load's JWT)") }
        let urls = dir.appendingPathComponent("urls-\(port).txt")
        let jwt = try h2loadAPNsInputs(node: node, key: key, port: port, count: count, urls: urls)
        let cpu0 = processCPUSeconds(serverPID)
        let h = try measure(h2load, ["-n", String(count), "-c", String(connections), "-m", String(streams), "-d", body.path,
                                     "-H", "authorization: bearer \(jwt)", "-H", "apns-topic: com.example.app",
                                     "-H", "apns-push-type: alert", "-H", "apns-priority: 10", "-H", "content-type: application/json",
                                     "-i", urls.path])
        let server = (processCPUSeconds(serverPID) - cpu0) / Double(count) * 1e6
        // The rate over the whole process's wall time, as for pushspool (h2load's own "req/s"
        // leaves out its start: it would flatter it by pushspool's process start and registry open).
        guard h.status == 0, h.stdout.contains("finished in") else {
            throw BenchError(description: "h2load: \(h.stdout.suffix(300)) \(h.stderr.suffix(300))")
        }
        let rate = Double(count) / h.seconds
        if let status = h.stdout.split(separator: "\n").first(where: { $0.hasPrefix("status codes:") }), !status.contains("\(count) 2xx") {
            throw BenchError(description: "h2load did not get \(count) 2xx answers: \(status)")
        }
        return NginxRound.Client(rate: rate, cpuMicrosPerPush: h.cpuSeconds / Double(count) * 1e6, peakRSS: h.peakRSS, serverMicrosPerPush: server)
    }
}
