import Foundation
import Testing
@testable import PushspoolKit

/// Several hosts on one throwaway PostgreSQL registry, each a `pushspool run` on a spool of its
/// own, sending to one fake FCM that answers every request after `delayMS` (a provider 100 ms
/// away). The fake counts each registration token's deliveries: every device once, and how
/// many twice.
final class SharedQueueHarness {
    let dir = TempDir("shared-queue")
    let uri: String
    let fcm: FakeServer
    let hosts: [String]
    private(set) var runs: [String: Process] = [:]

    init(hosts: [String] = ["a", "b", "c"], devices: Int, chunkSize: Int, lease: Int = 3, concurrency: Int = 64,
         delayMS: Int = 100, extraProvider: String = "", otherProviders: String = "", extraConfig: String = "",
         uri given: String? = nil) throws {
        uri = try given ?? RegistryFixture.postgresDatabase()
        self.hosts = hosts
        fcm = try FakeServer("fcm", args: ["delay-ms": "\(delayMS)"], dir: dir)
        let account = try String(contentsOf: Paths.fixture("service-account.json"), encoding: .utf8)
        dir.write("service-account.json", account.replacingOccurrences(of: "PORT", with: String(fcm.port)))
        for host in hosts {
            dir.write("\(host).json", """
                {"spool": "\(host)", "registry": "env:PUSHSPOOL_TEST_REGISTRY", "concurrency": \(concurrency),
                 "retry": {"max_attempts": 4, "base_delay_ms": 10, "max_delay_ms": 500},
                 "queue": {"chunk_size": \(chunkSize), "lease_seconds": \(lease)},
                 "providers": {"fcm": {"service_account_file": "service-account.json", "endpoint": "\(fcm.url)"\(extraProvider)}\(otherProviders)},
                 "tls": {"ca_file": "\(Paths.fixture("ca.pem").path)"}\(extraConfig)}
                """)
            let r = try cli(host, ["init"])
            try #require(r.status == 0, "\(r.stderr)")
        }
        var lines = ""
        for i in 0..<devices { lines += #"{"id":"d\#(i)","platform":"fcm","handle":"tok-\#(i)","tags":["all"]}"# + "\n" }
        dir.write("devices.jsonl", lines)
        let imported = try cli(hosts[0], ["import", dir.path("devices.jsonl")])
        try #require(imported.status == 0, "\(imported.stderr)")
    }

    var env: [String: String] { ["PUSHSPOOL_TEST_REGISTRY": uri] }

    func cli(_ host: String, _ args: [String]) throws -> RunResult {
        try runPushspool(args + ["--config", dir.path("\(host).json")], cwd: dir.url, env: env)
    }

    /// Starts `run` (watching) on every host named.
    func start(_ names: [String]? = nil) throws {
        for host in names ?? hosts {
            // Each host's log, for a failure's message (`log(host)`).
            FileManager.default.createFile(atPath: dir.path("\(host).log"), contents: nil)
            let p = pushspoolProcess(["run", "--log-format", "logfmt", "--config", dir.path("\(host).json")], cwd: dir.url, env: env)
            p.standardOutput = FileHandle.nullDevice
            let log = try FileHandle(forWritingTo: dir.url.appendingPathComponent("\(host).log"))
            log.seekToEndOfFile()
            p.standardError = log
            try p.run()
            runs[host] = p
        }
        // Each host is up once it reported to the queue (its first lease renewal, a third of a
        // lease after it started): a job dropped before then could be done before a slow host
        // (a loaded machine) looked.
        let expected = runs.count
        let up = pollUntil(timeout: 30, poll: 0.1) {
            let n = (try? query("SELECT count(*) FROM queue_hosts WHERE seen_at > clock_timestamp() - interval '10 seconds'"))?.first?.first ?? nil
            return Int(n ?? "0") ?? 0 >= expected
        }
        try #require(up, "not every host reported to the queue")
    }

    func log(_ host: String) -> String { dir.read("\(host).log") ?? "" }

    func drop(on host: String, _ id: String, _ json: String) throws {
        let spool = try Spool(root: dir.url.appendingPathComponent(host))
        try spool.submit(Array(json.utf8), name: "\(id).json")
    }

    /// Waits (up to `timeout` s) until the job's result log on `host` has its summary; returns it.
    func waitForSummary(on host: String, _ id: String, timeout: Double = 90) -> [String: Any]? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let summary = dir.jsonLines("\(host)/results/\(id).jsonl").first(where: { $0["type"] as? String == "summary" }) {
                return summary
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return nil
    }

    func deliveries(on host: String, _ id: String) -> [[String: Any]] {
        dir.jsonLines("\(host)/results/\(id).jsonl").filter { $0["type"] as? String == "delivery" }
    }

    /// Stops every run (SIGTERM) and waits; their exit statuses.
    @discardableResult
    func stopAll() -> [String: Int32] {
        var statuses: [String: Int32] = [:]
        for (host, p) in runs where p.isRunning { p.terminate(); statuses[host] = nil }
        for (host, p) in runs {
            p.waitUntilExit()
            statuses[host] = p.terminationStatus
        }
        runs = [:]
        return statuses
    }

    func kill9(_ host: String) {
        guard let p = runs[host] else { return }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        runs[host] = nil
    }

    func pid(_ host: String) -> Int32? { runs[host]?.processIdentifier }

    /// SQL on the registry, for what the queue recorded.
    func query(_ sql: String, _ parameters: [String?] = []) throws -> [[String?]] {
        let c = try PostgresConnection(uri: uri)
        defer { c.close() }
        let r = try c.query(sql, parameters)
        return (0..<r.count).map { i in (0..<r.columns).map { r.text(i, $0) } }
    }

    /// Chunks of a job by the host (pid) that completed them.
    func chunksByHost(_ id: String) throws -> [String: Int] {
        var out: [String: Int] = [:]
        for row in try query("SELECT host, count(*) FROM queue_chunks WHERE job = $1 AND done GROUP BY host", [id]) {
            out[row[0] ?? "-"] = Int(row[1] ?? "0") ?? 0
        }
        return out
    }

    /// The fake's deliveries (200 answers) per registration token.
    func perToken() -> [String: Int] {
        (fcm.state()["perToken"] as? [String: [String: Any]] ?? [:]).mapValues { t in
            (t["statuses"] as? [Any] ?? []).filter { ($0 as? NSNumber)?.intValue == 200 }.count
        }
    }

    /// When the fake last received a request (Unix seconds), from its per-token `times`.
    func latestRequest() -> Double? {
        (fcm.state()["perToken"] as? [String: [String: Any]] ?? [:]).values
            .compactMap { ($0["times"] as? [Any])?.compactMap { ($0 as? NSNumber)?.doubleValue }.max() }.max()
    }

    /// How this host's `run` is named in the queue (`status`, leases): host name and pid.
    func queueName(_ host: String) -> String? {
        pid(host).map { "\(HostName.current)/\($0)" }
    }

    /// How the queue names a job's origin: the host and its spool (the same after a restart).
    func originName(_ host: String) -> String { "\(HostName.current):\(dir.path(host))" }

    deinit { stopAll() }
}
