import Foundation
import Testing
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `pushspool serve` under faults, through the real binary: every stop signal ends it with exit
/// 0; a stop with requests in flight on a hanging hub ends within its grace time and keeps every
/// change it acknowledged; a hub that hangs holds up no registration; a burst of steering
/// requests does not hold up `/metrics`.
@Suite(.serialized) struct ServeLifecycleTests {
    static let auth = [("Authorization", FrontDoorFiles.bearer)]

    /// A spool and front-door config, reused by each start of `serve` (optionally routing
    /// platforms to a fake hub).
    final class Spool {
        let dir = TempDir("pushspool-serve-life")
        var env: [String: String] = [:]
        /// Folders of fakes that must outlive the test's calls.
        var keep: [TempDir] = []

        init(top: String = "", httpExtra: String = "") throws {
            FrontDoorFiles.write(into: dir)
            dir.write("pushspool.json", #"{"spool": "spool", \#(top)\#(FrontDoorFiles.section(httpExtra))}"#)
            try initSpool(["--config", dir.path("pushspool.json")], cwd: dir.url)
        }

        func serve() throws -> ServeProcess {
            try ServeProcess(config: dir.path("pushspool.json"), cwd: dir.url, env: env)
        }

        func cli(_ args: [String]) throws -> RunResult {
            try runPushspool(args + ["--config", dir.path("pushspool.json")], cwd: dir.url, env: env)
        }

        /// The registry's device ids (`pushspool devices`).
        func deviceIDs() throws -> Set<String> {
            let r = try cli(["devices"])
            return Set(r.stdout.split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
            }.compactMap { $0["id"] as? String })
        }
    }

    /// A spool whose fcm registrations go to a fake hub (`hubArgs`: e.g. hang-installations).
    static func hubSpool(hubArgs: [String: String], extraHTTP: String = "") throws -> (Spool, FakeServer) {
        let holder = TempDir("pushspool-serve-hub")
        let hub = try FakeServer("azurehub", args: ["key": "hub-key"].merging(hubArgs) { $1 }, dir: holder)
        let s = try Spool(top: """
            "routes": {"fcm": "azure"},
            "retry": {"max_attempts": 3, "base_delay_ms": 10, "max_delay_ms": 2000},
            "providers": {"azure": {"connection_string": "env:NH_CONNECTION_STRING", "hub": "myhub"}},
            "tls": {"ca_file": "\(Paths.fixture("ca.pem").path)"},
            """, httpExtra: extraHTTP)
        s.env = ["NH_CONNECTION_STRING": connectionString(hub)]
        s.keep.append(holder)
        return (s, hub)
    }

    static func connectionString(_ hub: FakeServer) -> String {
        "Endpoint=sb://127.0.0.1:\(hub.port)/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=hub-key"
    }

    static func fcmDevice(_ i: Int) -> String {
        #"{"platform": "fcm", "handle": "fcm-token-\#(i)", "tags": ["username:u\#(i)"]}"#
    }

    /// Runs `body(i)` for i in 0..<n on n threads at once; returns when all are done.
    static func concurrently<T: Sendable>(_ n: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
        let results = ResultsBox<T>(count: n)
        let group = DispatchGroup()
        for i in 0..<n {
            group.enter()
            Thread.detachNewThread {
                results.set(i, body(i))
                group.leave()
            }
        }
        group.wait()
        return results.values
    }

    static func p99(_ samples: [Double]) -> Double {
        let sorted = samples.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
    }

    /// Milliseconds one request takes.
    static func timed(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
    }

    /// The signal's exit: a clean exit 0, not a crash (SIGILL was 132 from a shell). A serve
    /// still running 15 s later is killed and reported as status -1.
    static func stop(_ serve: ServeProcess, with signal: Int32) -> (reason: Process.TerminationReason, status: Int32) {
        kill(serve.process.processIdentifier, signal)
        guard exits(serve.process, within: 15) else { return (.uncaughtSignal, -1) }
        return (serve.process.terminationReason, serve.process.terminationStatus)
    }

    /// Waits at most `seconds` for `process` to end; kills it (SIGKILL) when it does not.
    static func exits(_ process: Process, within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return false
        }
        return true
    }

    // MARK: - Item 0: every stop exits 0

    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func anIdleServeStopsWithExitZeroEveryTime(_ signal: Int32) throws {
        let s = try Spool()
        for round in 1...20 {
            let serve = try s.serve()
            #expect(try serve.client().request("GET", "/healthz").status == 200)
            let (reason, status) = Self.stop(serve, with: signal)
            #expect(reason == .exit && status == 0, "round \(round), signal \(signal): \(reason == .exit ? "exit" : "signal") \(status)\n\(serve.log.suffix(600))")
            if reason != .exit || status != 0 { return }
        }
    }

    // MARK: - Items 1 and 2: a stop with requests in flight; a hanging hub

    @Test(.enabled(if: Paths.nodeAvailable))
    func aStopWithRequestsInFlightOnAHangingHubKeepsEveryAcknowledgedChange() throws {
        let (s, hub) = try Self.hubSpool(hubArgs: ["hang-installations": "1"])
        let serve = try s.serve()
        let port = serve.port
        // 50 hub-routed registrations at once, and the stop once 10 are answered (or after 2 s):
        // the rest are on their way.
        let pid = serve.process.processIdentifier
        let answered = ResultsBox<Int>(count: 50)
        let stopper = Thread {
            for _ in 0..<200 where answered.values.count < 10 { usleep(10_000) }
            kill(pid, SIGTERM)
        }
        let started = DispatchTime.now().uptimeNanoseconds
        stopper.start()
        let answers = Self.concurrently(50) { i -> Int in
            guard let c = try? RawHTTPClient(port: port, timeout: 20),
                  let a = try? c.request("PUT", "/v1/devices/dev-\(i)", headers: Self.auth, body: Self.fcmDevice(i)) else { return 0 }
            answered.set(i, a.status)
            return a.status
        }
        let exited = Self.exits(serve.process, within: 20)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        #expect(exited, "serve did not exit within 20 s of SIGTERM")
        #expect(serve.process.terminationReason == .exit && serve.process.terminationStatus == 0, "\(serve.log.suffix(800))")
        #expect(seconds < 12, "stopped after \(seconds) s (grace 10 s)")
        #expect(!serve.log.contains("suspended connections"))
        // Every 2xx is durable: in the registry, and owed to the hub (hub/pending/ in the spool).
        let acknowledged = answers.enumerated().filter { (200..<300).contains($0.element) }.map { "dev-\($0.offset)" }
        #expect(answers.allSatisfy { [0, 200, 503].contains($0) }, "\(answers)")
        #expect(acknowledged.count >= 10, "\(answers)")
        let stored = try s.deviceIDs()
        let owed = Set(s.dir.list("spool/hub/pending") + s.dir.list("spool/hub/sending"))
        for id in acknowledged {
            #expect(stored.contains(id), "\(id) was answered 2xx but is not in the registry")
            #expect(owed.contains(id), "\(id) was answered 2xx but is not owed to the hub")
        }
        // Nothing half-applied: a device in the registry is owed to the hub too.
        for id in stored { #expect(owed.contains(id), "\(id) is in the registry but not owed to the hub") }
        #expect((hub.state()["installations"] as? [String: Any])?.isEmpty ?? true)

        // With a hub that answers, the next serve writes what is owed, and says so per device.
        let holder = TempDir("pushspool-serve-hub2")
        let goodHub = try FakeServer("azurehub", args: ["key": "hub-key"], dir: holder)
        s.keep.append(holder)
        s.env = ["NH_CONNECTION_STRING": Self.connectionString(goodHub)]
        let again = try s.serve()
        let c = try again.client()
        var written = Set<String>()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            written = Set((goodHub.state()["installations"] as? [String: Any])?.keys.map { $0 } ?? [])
            if stored.isSubset(of: written) { break }
            usleep(100_000)
        }
        #expect(stored.isSubset(of: written), "the hub got \(written.count) of \(stored.count)")
        if let id = stored.first {
            var hubState: String?
            for _ in 0..<50 {
                hubState = (try c.request("GET", "/v1/devices/\(id)", headers: Self.auth).json as? [String: Any])?["hub"] as? String
                if hubState == "written" { break }
                usleep(100_000)
            }
            #expect(hubState == "written")
        }
        #expect(Self.stop(again, with: SIGTERM).status == 0)
    }

    @Test(.enabled(if: Paths.nodeAvailable))
    func duringAHubOutageOtherRegistrationsStayFast() throws {
        let (s, hub) = try Self.hubSpool(hubArgs: ["hang-installations": "1"])
        defer { withExtendedLifetime(hub) {} }
        let serve = try s.serve()
        let c = try serve.client()
        let port = serve.port
        // Hub-routed registrations first: each one's hub write hangs.
        let hubAnswers = Self.concurrently(8) { i -> Double in
            guard let c = try? RawHTTPClient(port: port, timeout: 20) else { return .infinity }
            return Self.timed { _ = try? c.request("PUT", "/v1/devices/hub-\(i)", headers: Self.auth, body: Self.fcmDevice(i)) }
        }
        #expect(hubAnswers.allSatisfy { $0 < 1000 }, "hub-routed registrations took \(hubAnswers) ms")
        let pending = try c.request("GET", "/v1/devices/hub-0", headers: Self.auth)
        #expect(pending.status == 200 && (pending.json as? [String: Any])?["hub"] as? String == "pending", "\(pending.text)")
        // The hub is there and hangs (not refused): its writes are in flight.
        var hung = 0
        for _ in 0..<100 where hung == 0 {
            hung = (hub.state()["installationOps"] as? [String: Any])?["hung"] as? Int ?? 0
            if hung == 0 { usleep(20_000) }
        }
        #expect(hung > 0, "the hub got no installation write")
        // Meanwhile, registrations of a platform no hub keeps.
        var samples: [Double] = []
        for i in 0..<200 {
            let handle = String(repeating: String(format: "%02x", i % 256), count: 32)
            samples.append(try Self.timed {
                let a = try c.request("PUT", "/v1/devices/apns-\(i)", headers: Self.auth,
                                      body: #"{"platform": "apns", "handle": "\#(handle)", "tags": ["username:a"]}"#)
                if a.status != 200 { Issue.record("apns-\(i): \(a.text)") }
            })
        }
        #expect(Self.p99(samples) <= 50, "p99 \(Self.p99(samples)) ms")
        #expect(Self.stop(serve, with: SIGTERM).status == 0)
    }

    // MARK: - Item 5: steering parks no thread

    @Test func metricsStayFastWhileAHundredResumesComeIn() throws {
        // 100 services' connections from one loopback address: no per-address cap (as behind a proxy).
        let s = try Spool(httpExtra: #", "max_connections_per_address": 0"#)
        // A dispatcher that looks alive (a fresh heartbeat, a live pid: this test's) but never acknowledges.
        let record = #"{"pid": \#(getpid()), "instance": "ghost", "heartbeat_at": "\#(ISO8601DateFormatter().string(from: Date()))"}"#
        try FileManager.default.createDirectory(atPath: s.dir.path("spool/.state/dispatchers"), withIntermediateDirectories: true)
        s.dir.write("spool/.state/dispatchers/ghost.json", record)
        let serve = try s.serve()
        let c = try serve.client()
        for i in 0..<100 {
            let job = #"{"id": "later-\#(i)", "broadcast": true, "pns": ["apns"], "message": "m", "not_before": "2099-01-01T00:00:00Z"}"#
            #expect(try c.request("POST", "/v1/jobs", headers: Self.auth, body: job).status == 202)
            #expect(try c.request("POST", "/v1/jobs/later-\(i)/pause", headers: Self.auth).status / 100 == 2)
        }
        let port = serve.port
        let resumed = DispatchSemaphore(value: 0)
        let statuses = Mutex<[Int]>([])
        let resuming = Thread {
            defer { resumed.signal() }
            let all = Self.concurrently(100) { i -> Int in
                guard let c = try? RawHTTPClient(port: port, timeout: 20),
                      let a = try? c.request("POST", "/v1/jobs/later-\(i)/resume", headers: Self.auth) else { return 0 }
                return a.status
            }
            statuses.withLock { $0 = all }
        }
        resuming.start()
        usleep(20_000)
        var samples: [Double] = []
        for _ in 0..<50 {
            samples.append(try Self.timed {
                let a = try c.request("GET", "/metrics", headers: Self.auth)
                if a.status != 200 { Issue.record("/metrics: \(a.status)") }
            })
            usleep(20_000)
        }
        #expect(Self.p99(samples) <= 50, "/metrics p99 \(Self.p99(samples)) ms during 100 resumes")
        resumed.wait()
        #expect(statuses.withLock { $0 }.allSatisfy { $0 == 202 }, "\(statuses.withLock { $0 })")
        let a = try c.request("POST", "/v1/jobs/later-0/resume", headers: Self.auth)
        #expect(a.status == 202, "\(a.text)")
        #expect(s.dir.list("spool/control").filter { $0.hasSuffix(".pause") }.isEmpty)
        #expect(Self.stop(serve, with: SIGTERM).status == 0)
    }
}

final class ResultsBox<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T?]
    init(count: Int) { items = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ value: T) { lock.lock(); items[i] = value; lock.unlock() }
    var values: [T] { lock.lock(); defer { lock.unlock() }; return items.compactMap { $0 } }
}
