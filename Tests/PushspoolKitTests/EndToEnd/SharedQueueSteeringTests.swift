import Foundation
import Testing
@testable import PushspoolKit

/// Steering and reading a queued job from hosts that did not accept it (README "Several hosts"):
/// `status`, `cancel`, `pause`, `resume` and serve's job routes on any host act on, and show,
/// every host's share. Real `run` processes on spools of their own, one throwaway PostgreSQL
/// registry, one fake FCM answering after 100 ms; each host sends at most `concurrency`
/// requests at once, so a job of a few thousand devices runs for seconds.
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"), .serialized)
struct SharedQueueSteeringTests {
    static let job = #"{"id":"slow","to_tag":"all","pns":["fcm"],"message":"hello"}"#

    /// `status --json` on a host (its `"queue"` object), parsed.
    static func queueStatus(_ h: SharedQueueHarness, on host: String) throws -> [String: Any]? {
        let r = try h.cli(host, ["status", "--json"])
        guard r.status == 0, let doc = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] else { return nil }
        return doc["queue"] as? [String: Any]
    }

    /// Waits (up to `timeout` s) until the fake has answered at least `count` requests.
    static func waitForRequests(_ h: SharedQueueHarness, atLeast count: Int, timeout: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if h.perToken().values.reduce(0, +) >= count { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    @Test func statusOnAnotherHostListsTheHostsAndTheQueuedJob() throws {
        let h = try SharedQueueHarness(hosts: ["a", "b"], devices: 1200, chunkSize: 50, concurrency: 8)
        try h.start()
        try h.drop(on: "a", "slow", Self.job)
        let a = try #require(h.queueName("a")), b = try #require(h.queueName("b"))
        // Both hosts report (renewing every lease / 3) and both hold chunks of the job.
        var seen: (hosts: [[String: Any]], job: [String: Any])?
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let q = try Self.queueStatus(h, on: "b"), let hosts = q["hosts"] as? [[String: Any]],
               let job = (q["jobs"] as? [[String: Any]])?.first(where: { $0["id"] as? String == "slow" }),
               Set(hosts.compactMap { $0["host"] as? String }).isSuperset(of: [a, b]),
               let leases = job["leases"] as? [String: Any], leases[a] != nil, leases[b] != nil {
                seen = (hosts, job)
                break
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        let text = try h.cli("b", ["status"])
        h.stopAll()
        let found = try #require(seen, "status --json on b never listed both hosts holding chunks of the job")
        #expect(found.job["origin"] as? String == h.originName("a"))
        #expect(found.job["state"] as? String == "running")
        #expect(((found.job["chunks"] as? NSNumber)?.intValue ?? 0) > 0)
        for host in found.hosts {
            #expect(host["seen_s_ago"] is NSNumber && host["chunks"] is NSNumber && host["sent"] is NSNumber && host["rate_per_s"] is NSNumber, "\(host)")
        }
        #expect(text.status == 0)
        #expect(text.stdout.contains("shared queue in "), "\(text.stdout)")
        #expect(text.stdout.contains("host \(a): seen "), "\(text.stdout)")
        #expect(text.stdout.contains("slow from \(h.originName("a")): "), "\(text.stdout)")
    }

    @Test func statusSaysInOneLineWhenTheQueueCannotBeRead() throws {
        let h = try SharedQueueHarness(hosts: ["a"], devices: 1, chunkSize: 50)
        // Host a's spool with a registry nobody listens on.
        let config = try String(contentsOf: h.dir.url.appendingPathComponent("a.json"), encoding: .utf8)
            .replacingOccurrences(of: "env:PUSHSPOOL_TEST_REGISTRY", with: "postgresql://pushspool@127.0.0.1:1/nothing")
        h.dir.write("down.json", config)
        let r = try runPushspool(["status", "--config", h.dir.path("down.json")], cwd: h.dir.url)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").filter { $0.contains("shared queue") }
        #expect(lines.count == 1 && lines[0].contains("cannot be read"), "\(r.stdout)")
        let json = try runPushspool(["status", "--json", "--config", h.dir.path("down.json")], cwd: h.dir.url)
        #expect(json.status == 0, "\(json.stderr)")
        let doc = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect((doc?["queue"] as? [String: Any])?["error"] is String, "\(json.stdout)")
        #expect(doc?["folders"] != nil)
    }

    /// Three hosts sending a job of 2400 devices accepted on host a (some 10 s of work), once
    /// the fake has seen 300 of them.
    static func runningJob() throws -> SharedQueueHarness {
        let h = try SharedQueueHarness(devices: 2400, chunkSize: 50, concurrency: 8)
        try h.start()
        try h.drop(on: "a", "slow", Self.job)
        try #require(Self.waitForRequests(h, atLeast: 300), "the job did not start")
        return h
    }

    /// `cancel`, `pause` or `resume` of the job on a host that does not hold it: through the queue.
    static func steer(_ h: SharedQueueHarness, on host: String, _ command: String) throws {
        let r = try h.cli(host, [command, "slow"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("in the shared queue"), "\(r.stdout)")
    }

    @Test func cancelOnAnotherHostStopsEveryHostWithinTwoSeconds() throws {
        let h = try Self.runningJob()
        try Self.steer(h, on: "c", "cancel")
        let cancelled = Date().timeIntervalSince1970
        let summary = h.waitForSummary(on: "a", "slow", timeout: 30)
        // Anything sent more than 2 s after the cancel returned would show by now.
        Thread.sleep(until: Date(timeIntervalSince1970: cancelled + 3))
        let last = try #require(h.latestRequest())
        h.stopAll()
        #expect(last - cancelled <= 2, "the fake saw a request \(last - cancelled) s after the cancel returned")
        let s = try #require(summary, "no summary on host a")
        #expect(s["status"] as? String == "cancelled", "\(s)")
        #expect(((s["not_sent"] as? NSNumber)?.intValue ?? 0) > 0, "\(s)")
        #expect(h.perToken().values.reduce(0, +) < 2400)
    }

    /// A cancel while a host that holds chunks of the job is dead: no host takes a cancelled
    /// job's chunk over and a lease running out tells no one, so the origin ends the job by
    /// looking again just after the dead host's leases end (`Progress.look`), not by a timer.
    @Test func cancelWhileAHolderIsDeadEndsOnceItsLeasesRunOut() throws {
        let h = try Self.runningJob()
        let b = try #require(h.pid("b"))
        let holding = pollUntil(timeout: 30, poll: 0.05) {
            let held = (try? h.query("SELECT count(*) FROM queue_chunks WHERE host LIKE $1 AND NOT done", ["%/\(b)"]))?.first?.first ?? nil
            return Int(held ?? "0") ?? 0 > 0
        }
        try #require(holding, "host b never held a chunk")
        h.kill9("b")
        try Self.steer(h, on: "c", "cancel")
        let summary = h.waitForSummary(on: "a", "slow", timeout: 30)
        h.stopAll()
        let s = try #require(summary, "no summary on host a")
        #expect(s["status"] as? String == "cancelled", "\(s)")
    }

    @Test func pauseOnOneHostAndResumeOnAnotherCompletesTheJobOnce() throws {
        let h = try Self.runningJob()
        try Self.steer(h, on: "b", "pause")
        // Paused everywhere: nothing new reaches the fake between 2 and 4 s after the pause.
        Thread.sleep(forTimeInterval: 2)
        let before = h.perToken().values.reduce(0, +)
        let state = try #require(try Self.queueStatus(h, on: "c")?["jobs"] as? [[String: Any]]).first { $0["id"] as? String == "slow" }
        Thread.sleep(forTimeInterval: 2)
        let after = h.perToken().values.reduce(0, +)
        #expect(before == after, "\(after - before) requests while paused")
        #expect(before < 2400, "the job ended before the pause")
        #expect(state?["state"] as? String == "paused", "\(state ?? [:])")
        try Self.steer(h, on: "c", "resume")
        // Every host takes the chunks again: each device once on the provider's side.
        #expect(Self.waitForRequests(h, atLeast: 2400, timeout: 60), "\(h.perToken().values.reduce(0, +)) of 2400 sent after the resume")
        let tokens = h.perToken()
        #expect(tokens.count == 2400 && tokens.values.allSatisfy { $0 == 1 }, "\(tokens.values.filter { $0 != 1 }.count) tokens not delivered once")
        // The origin ends the job in its log once it follows the job again.
        let summary = h.waitForSummary(on: "a", "slow", timeout: 20)
        let lines = h.deliveries(on: "a", "slow")
        h.stopAll()
        let s = try #require(summary, "no summary on host a")
        #expect(s["status"] as? String == "done", "\(s)")
        #expect((s["delivered"] as? NSNumber)?.intValue == 2400, "\(s)")
        #expect(Set(lines.compactMap { $0["device"] as? String }).count == 2400)
    }

    @Test func serveOnAnotherHostReadsAndSteersTheQueuedJob() throws {
        let h = try SharedQueueHarness(hosts: ["a", "b"], devices: 1200, chunkSize: 50, concurrency: 8)
        // Host b also serves the job API.
        FrontDoorFiles.write(into: h.dir)
        let config = try String(contentsOf: h.dir.url.appendingPathComponent("b.json"), encoding: .utf8)
        h.dir.write("b-serve.json", String(config.dropLast(config.hasSuffix("}\n") ? 2 : 1)) + ", " + FrontDoorFiles.section() + "}")
        let serve = try ServeProcess(config: h.dir.path("b-serve.json"), cwd: h.dir.url, env: h.env)
        defer { serve.stop() }
        let auth = [("Authorization", FrontDoorFiles.bearer)]
        func call(_ method: String, _ path: String) throws -> RawHTTPClient.Answer {
            try serve.client().request(method, path, headers: auth, body: method == "POST" ? "" : nil)
        }
        #expect(try call("GET", "/v1/jobs/slow").status == 404)
        #expect(try call("GET", "/v1/jobs/slow/results").status == 404)
        #expect(try call("POST", "/v1/jobs/slow/pause").status == 404)

        try h.start()
        try h.drop(on: "a", "slow", Self.job)
        try #require(Self.waitForRequests(h, atLeast: 100), "the job did not start")
        let running = try call("GET", "/v1/jobs/slow")
        #expect(running.status == 200)
        let entry = try JSONSerialization.jsonObject(with: Data(running.body)) as? [String: Any]
        #expect(entry?["origin"] as? String == h.originName("a") && entry?["state"] as? String == "running", "\(entry ?? [:])")

        // Paused and resumed through b's API, which does not hold the job.
        let pause = try call("POST", "/v1/jobs/slow/pause")
        #expect(pause.status == 202, "\(String(decoding: pause.body, as: UTF8.self))")
        let pauseBody = try JSONSerialization.jsonObject(with: Data(pause.body)) as? [String: Any]
        #expect(pauseBody?["shared_queue"] as? Bool == true && pauseBody?["folder"] is NSNull, "\(pauseBody ?? [:])")
        let pausedEntry = try JSONSerialization.jsonObject(with: Data(try call("GET", "/v1/jobs/slow").body)) as? [String: Any]
        #expect(pausedEntry?["state"] as? String == "paused", "\(pausedEntry ?? [:])")
        #expect(try call("POST", "/v1/jobs/slow/resume").status == 202)

        // The results while a is the origin: b has no log of its own, the queue's is streamed.
        let partial = try call("GET", "/v1/jobs/slow/results")
        #expect(partial.status == 200 && partial.header("content-type") == "application/x-ndjson")
        let summary = h.waitForSummary(on: "a", "slow", timeout: 60)
        let whole = try call("GET", "/v1/jobs/slow/results")
        let ended = try JSONSerialization.jsonObject(with: Data(try call("GET", "/v1/jobs/slow").body)) as? [String: Any]
        h.stopAll()
        #expect(summary?["status"] as? String == "done", "\(summary ?? [:])")
        let lines = String(decoding: whole.body, as: UTF8.self).split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let types = lines.compactMap { $0["type"] as? String }
        #expect(types.first == "job" && types.last == "summary", "\(types.prefix(3)) … \(types.suffix(3))")
        #expect(Set(lines.filter { $0["type"] as? String == "delivery" }.compactMap { $0["device"] as? String }).count == 1200)
        #expect(FileManager.default.fileExists(atPath: h.dir.path("b/results/slow.jsonl")) == false)
        #expect(ended?["state"] as? String == "done" && (ended?["delivered"] as? NSNumber)?.intValue == 1200, "\(ended ?? [:])")
    }
}
