import Foundation
import Testing
@testable import PushspoolKit
@testable import PushspoolServer
#if canImport(Glibc)
import Glibc
#endif

/// Several processes sharing `metrics.textfile`: a file each, samples labelled, never a fight.
@Suite struct MetricsTextfileTests {
    static func rendered() -> String {
        let m = Metrics()
        m.job(status: "done")
        m.delivery(platform: "fcm", provider: "fcm", status: "delivered")
        m.requestDuration(provider: "fcm", seconds: 0.02)
        var g = Metrics.Gauges()
        g.queue = [("incoming", 3)]
        return m.render(g)
    }

    @Test func labelsEverySampleAndStaysValidExposition() throws {
        let text = Metrics.labelled(Self.rendered(), with: [("spool_instance", "web1:/var/spool/x\"y"), ("process", "run-1")])
        let e = try Exposition(text)
        #expect(!e.samples.isEmpty)
        #expect(e.samples.allSatisfy { $0.labels["process"] == "run-1" && $0.labels["spool_instance"] == "web1:/var/spool/x\"y" })
        #expect(e.value("pushspool_jobs_total", ["status": "done"]) == 1)
        #expect(e.value("pushspool_targets_remaining") == 0)
        #expect(text.contains("pushspool_targets_remaining{spool_instance=\"web1:/var/spool/x\\\"y\",process=\"run-1\"} 0\n"))
    }

    @Test func mergedFilesOfTwoProcessesAreOneValidExposition() throws {
        let a = Metrics.labelled(Self.rendered(), with: [("process", "run-0")])
        let b = Metrics.labelled(Self.rendered(), with: [("process", "run-1")])
        let e = try Exposition(Metrics.merge([a, b]))
        #expect(e.sum("pushspool_jobs_total", where: ["status": "done"]) == 2)
        #expect(e.sum("pushspool_provider_request_duration_seconds_count") == 2)
        #expect(e.types["pushspool_jobs_total"] == "counter")
    }

    @Test func eachProcessTakesTheLowestFreeSlotAndKeepsIt() throws {
        let dir = TempDir("pushspool-metrics")
        let configured = dir.path("pushspool.prom")
        let first = try MetricsTextfile(configured: configured, role: .run, instance: "i")
        var second: MetricsTextfile? = try MetricsTextfile(configured: configured, role: .run, instance: "i")
        let serve = try MetricsTextfile(configured: configured, role: .serve, instance: "i")
        #expect(first.path == configured)
        #expect(second?.path == dir.path("pushspool.run-1.prom"))
        #expect(serve.path == dir.path("pushspool.serve-0.prom"))
        try first.write("x 1\n")
        try second?.write("x 2\n")
        #expect(MetricsTextfile.dispatcherFiles(configured: configured) == [configured, dir.path("pushspool.run-1.prom")])
        second = nil      // that process ended: its slot is free for the next one
        // A process another test spawns at that moment can hold a copy of the lock's descriptor
        // until its exec closes it (O_CLOEXEC): the slot is free once that copy is gone.
        var third = try MetricsTextfile(configured: configured, role: .run, instance: "i")
        for _ in 0..<100 where third.process != "run-1" {
            usleep(10_000)
            third = try MetricsTextfile(configured: configured, role: .run, instance: "i")
        }
        #expect(third.path == dir.path("pushspool.run-1.prom"))
        #expect(third.process == "run-1")
    }

    @Test func aFolderThatCannotHoldTheFileIsNamed() {
        #expect(throws: SpoolError.self) {
            try MetricsTextfile(configured: "/nonexistent/dir/pushspool.prom", role: .run, instance: "i")
        }
        do {
            _ = try MetricsTextfile(configured: "/nonexistent/dir/pushspool.prom", role: .run, instance: "i")
        } catch {
            #expect(error.description.contains("/nonexistent/dir/"))
        }
    }
}

extension MetricsTextfileTests {
    /// Issue: two dispatchers on one spool overwrote each other's file, and
    /// `pushspool_jobs_total{status="done"}` alternated 2, 5, 2, 5… (counter resets to Prometheus).
    @Test func twoDispatchersOnOneSpoolWriteTwoFilesWhoseCountersNeverGoDown() throws {
        let dir = TempDir("pushspool-metrics")
        try FileManager.default.createDirectory(atPath: dir.path("metrics"), withIntermediateDirectories: false)
        // Relative paths resolve against the config file's folder, whatever the working directory.
        dir.write("pushspool.json", #"{"spool": "spool", "metrics": {"textfile": "metrics/pushspool.prom", "interval_seconds": 1}}"#)
        let config = ["--config", dir.path("pushspool.json")]
        let elsewhere = URL(fileURLWithPath: "/")
        try initSpool(config, cwd: elsewhere)
        #expect(try runPushspool(["register", "--platform", "fcm", "--handle", "tok-1", "--tag", "all"] + config, cwd: elsewhere).status == 0)
        let a = try startPushspool(["run"] + config, cwd: elsewhere)
        let b = try startPushspool(["run"] + config, cwd: elsewhere)
        defer { for p in [a, b] where p.isRunning { kill(p.processIdentifier, SIGKILL) } }

        let files = ["pushspool.prom", "pushspool.run-1.prom"]
        var last: [String: Double] = [:]
        var problems: [String] = []
        func sample() {
            for name in files {
                guard let text = dir.read("metrics/\(name)") else { continue }
                do {
                    let done = try Exposition(text).sum("pushspool_jobs_total", where: ["status": "done"])
                    if done < last[name] ?? 0 { problems.append("\(name): jobs done went from \(last[name] ?? 0) to \(done)") }
                    last[name] = done
                } catch {
                    problems.append("\(name): \(error)")
                }
            }
        }
        for round in 0..<6 {
            for i in 0..<4 {
                #expect(try runPushspool(["submit", "--to-tag", "all", "--pns", "fcm", "--message", "m", "--id", "j\(round)-\(i)"] + config,
                                         cwd: elsewhere).status == 0)
            }
            for _ in 0..<5 { sample(); Thread.sleep(forTimeInterval: 0.1) }
        }
        eventually("24 jobs done and counted", poll: 0.1, lastSeen: { "done \(dir.list("spool/done").count), counted \(last)" }) {
            sample()
            return dir.list("spool/done").count >= 24 && last.values.reduce(0, +) >= 24
        }
        for p in [a, b] { kill(p.processIdentifier, SIGTERM); p.waitUntilExit() }
        sample()
        #expect(problems.isEmpty, "\(problems)")
        #expect(dir.list("spool/done").count == 24)
        #expect(dir.list("metrics").filter { !$0.hasPrefix(".") } == files)
        #expect(last.values.reduce(0, +) == 24, "every job counted once, by the dispatcher that ran it: \(last)")
        // Each file is that process's alone: its samples say which.
        let processes = Set(files.compactMap { dir.read("metrics/\($0)") }.compactMap { try? Exposition($0) }
            .flatMap { $0.samples.compactMap { $0.labels["process"] } })
        #expect(processes == ["run-0", "run-1"])
    }
}

extension MetricsTextfileTests {
    /// `serve` writes a file of its own beside the dispatchers' (never theirs), and its
    /// `/metrics` merges every dispatcher's file into one valid exposition.
    @Test func serveWritesItsOwnFileAndServesEveryDispatchersFile() throws {
        let door = try SandboxFrontDoor(top: #""metrics": {"textfile": "metrics.prom", "interval_seconds": 1, "instance": "front-1"}, "#)
        // Two dispatchers' files, as two `run`s would leave them.
        let one = Metrics.labelled(Self.rendered(), with: [("spool_instance", "front-1"), ("process", "run-0")])
        let two = Metrics.labelled(Self.rendered(), with: [("spool_instance", "front-1"), ("process", "run-1")])
        door.dir.write("metrics.prom", one, mode: 0o644)
        door.dir.write("metrics.run-1.prom", two, mode: 0o644)
        let health = try door.serve.client().request("GET", "/healthz")
        #expect(health.status == 200)
        let own = eventually("serve's own metrics file counting the health check", timeout: 30, poll: 0.1,
                             { door.dir.read("metrics.serve-0.prom").flatMap { try? Exposition($0) } },
                             until: { ($0?.sum("pushspool_http_requests_total", where: ["route": "GET /healthz"]) ?? 0) >= 1 })
        let e = try #require(own, "serve's own metrics file")
        #expect(e.samples.allSatisfy { $0.labels["process"] == "serve-0" && $0.labels["spool_instance"] == "front-1" })
        #expect(door.dir.read("metrics.prom") == one, "a dispatcher's file is never written by serve")

        let scraped = try door.serve.client().request("GET", "/metrics", headers: [("Authorization", FrontDoorFiles.bearer)])
        #expect(scraped.status == 200)
        let merged = try Exposition(scraped.text)
        #expect(merged.sum("pushspool_jobs_total", where: ["status": "done"]) == 2, "both dispatchers' files")
    }
}
