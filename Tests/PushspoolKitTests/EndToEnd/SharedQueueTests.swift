import Foundation
import Testing
@testable import PushspoolKit

/// The job queue in PostgreSQL (README "Several hosts"): three `run` processes, each on a spool of
/// its own, one registry, one fake FCM answering after 100 ms.
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"), .serialized)
struct SharedQueueTests {
    static let broadcast = #"{"id":"everyone","to_tag":"all","pns":["fcm"],"message":"hello"}"#

    @Test func oneBroadcastDroppedOnOneHostIsSentByEveryHost() throws {
        let h = try SharedQueueHarness(devices: 3000, chunkSize: 200)
        try h.start()
        try h.drop(on: "a", "everyone", Self.broadcast)
        let summary = h.waitForSummary(on: "a", "everyone")
        let statuses = h.stopAll()
        try #require(summary != nil, "no summary on host a")
        #expect(summary?["status"] as? String == "done")
        #expect((summary?["delivered"] as? NSNumber)?.intValue == 3000, "\(summary ?? [:])")
        #expect(statuses.values.allSatisfy { $0 == 0 }, "\(statuses)")
        // Each device once, on the provider's side and in the one result log.
        let tokens = h.perToken()
        #expect(tokens.count == 3000 && tokens.values.allSatisfy { $0 == 1 }, "\(tokens.values.filter { $0 != 1 }.count) tokens not delivered once")
        let lines = h.deliveries(on: "a", "everyone")
        #expect(lines.count == 3000)
        #expect(Set(lines.compactMap { $0["device"] as? String }).count == 3000)
        // Every host took a share: 15 chunks of 200.
        let shares = try h.chunksByHost("everyone")
        #expect(shares.values.reduce(0, +) == 15, "\(shares)")
        #expect(shares.count == 3, "chunks by host: \(shares)")
        // Any host reads the results: the spool's log on a, the queue's copy on b and c.
        for host in ["b", "c"] {
            let r = try h.cli(host, ["results", "everyone"])
            #expect(r.status == 0, "\(r.stderr)")
            let types = r.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .compactMap { $0["type"] as? String }
            #expect(types.filter { $0 == "delivery" }.count == 3000 && types.first == "job" && types.last == "summary", "host \(host)")
        }
    }

    /// A host killed while it holds chunks: its leases run out and the other hosts take its
    /// chunks, re-sending only what it had not recorded (at most its requests in flight).
    @Test func killNineOfOneHostMidJobLosesNothing() throws {
        let concurrency = 32
        let h = try SharedQueueHarness(devices: 6000, chunkSize: 200, lease: 3, concurrency: concurrency)
        try h.start()
        try h.drop(on: "a", "everyone", Self.broadcast)
        let b = try #require(h.pid("b"))
        // Once b holds chunks and has recorded outcomes, it dies.
        let holding = pollUntil(timeout: 60, poll: 0.05) {
            let held = (try? h.query("SELECT count(*) FROM queue_chunks WHERE host LIKE $1 AND NOT done", ["%/\(b)"]))?.first?.first ?? nil
            let recorded = (try? h.query("SELECT count(*) FROM queue_outcomes o JOIN queue_chunks q ON q.job = o.job AND q.chunk = o.chunk WHERE q.host LIKE $1", ["%/\(b)"]))?.first?.first ?? nil
            return Int(held ?? "0") ?? 0 > 0 && Int(recorded ?? "0") ?? 0 > 0
        }
        try #require(holding, "host b never held a chunk")
        let killed = Date()
        h.kill9("b")
        // Its chunks go to a or c once their leases ran out.
        let takenOver = pollUntil(timeout: 30, poll: 0.1) {
            let left = (try? h.query("SELECT count(*) FROM queue_chunks WHERE host LIKE $1 AND NOT done", ["%/\(b)"]))?.first?.first ?? nil
            return Int(left ?? "1") == 0
        }
        let takeover = Date().timeIntervalSince(killed)
        let summary = h.waitForSummary(on: "a", "everyone")
        h.stopAll()
        // The lease (3 s), a look (1 s), and a free slot on a or c (each sends 4 chunks at once):
        // a bound for a loaded machine, not a speed claim (`pushspool-bench queue` measures it).
        #expect(takenOver && takeover <= 15, "b's chunks were taken over after \(takeover) s")
        try #require(summary != nil)
        #expect(summary?["status"] as? String == "done")
        #expect((summary?["delivered"] as? NSNumber)?.intValue == 6000, "\(summary ?? [:])")
        let tokens = h.perToken()
        #expect(tokens.count == 6000 && tokens.values.allSatisfy { $0 >= 1 }, "\(6000 - tokens.count) devices never delivered")
        let twice = tokens.values.filter { $0 > 1 }.count
        print("kill -9 of one host of three: \(twice) devices sent twice (bound \(concurrency)); its chunks taken over after \(String(format: "%.1f", takeover)) s")
        #expect(twice <= concurrency, "\(twice) devices were sent twice; b had at most \(concurrency) in flight")
        #expect(h.deliveries(on: "a", "everyone").count == 6000)
    }

    /// PostgreSQL restarted while the job runs: hosts keep what they hold, reconnect on their
    /// own, and the job completes with every device delivered.
    @Test func postgresRestartedMidJobCompletes() throws {
        let cluster = try PostgresCluster()
        try cluster.start()
        defer { cluster.stop() }
        let uri = try cluster.createDatabase()
        let h = try SharedQueueHarness(hosts: ["a", "b"], devices: 4000, chunkSize: 200, lease: 6, concurrency: 32, uri: uri)
        try h.start()
        try h.drop(on: "a", "everyone", Self.broadcast)
        let started = pollUntil(timeout: 60, poll: 0.05) {
            Int((try? h.query("SELECT count(*) FROM queue_chunks WHERE done"))?.first?.first.flatMap { $0 } ?? "0") ?? 0 >= 2
        }
        try #require(started, "no chunk completed")
        cluster.stop()
        Thread.sleep(forTimeInterval: 2)
        try cluster.start()
        let summary = h.waitForSummary(on: "a", "everyone", timeout: 120)
        let statuses = h.stopAll()
        try #require(summary != nil, "the job did not complete after the restart; a: \(h.log("a").suffix(3000)) b: \(h.log("b").suffix(2000))")
        #expect(summary?["status"] as? String == "done")
        #expect((summary?["delivered"] as? NSNumber)?.intValue == 4000, "\(summary ?? [:])")
        let tokens = h.perToken()
        #expect(tokens.count == 4000 && tokens.values.allSatisfy { $0 >= 1 })
        #expect(tokens.values.filter { $0 > 1 }.count <= 2 * 32, "a: \(h.log("a").suffix(4000)) b: \(h.log("b").suffix(3000))")
        #expect(statuses.values.allSatisfy { $0 == 0 }, "\(statuses)")
    }

    /// One job shared by three hosts, its provider capped at 300/s: the cap holds across them
    /// (the provider's own clock: the fake's arrival times).
    @Test func oneCapHoldsForAJobSharedByThreeHosts() throws {
        let h = try SharedQueueHarness(devices: 1800, chunkSize: 100, concurrency: 64, extraProvider: #", "max_per_second": 300"#)
        // Each host's first requests wait for its OAuth token: the cap admits none meanwhile
        // (`PushProvider.whenReady`), so they do not leave together when it comes.
        try h.start()
        let t0 = Date().timeIntervalSince1970
        try h.drop(on: "a", "everyone", Self.broadcast)
        let summary = h.waitForSummary(on: "a", "everyone")
        h.stopAll()
        #expect((summary?["delivered"] as? NSNumber)?.intValue == 1800, "\(summary ?? [:])")
        let shares = try h.chunksByHost("everyone")
        #expect(shares.count == 3, "chunks by host: \(shares)")
        let perToken = h.fcm.state()["perToken"] as? [String: [String: Any]] ?? [:]
        let times = perToken.values.flatMap { ($0["times"] as? [NSNumber] ?? []).map(\.doubleValue) }.sorted()
        try #require(times.count == 1800)
        var busiest = 0, start = 0
        for end in times.indices {
            while times[end] - times[start] >= 1 { start += 1 }
            busiest = max(busiest, end - start + 1)
        }
        var buckets: [Int: Int] = [:]
        for t in times { buckets[Int((t - t0) * 4), default: 0] += 1 }
        print("one job on three hosts, max_per_second 300: busiest second \(busiest); per 250 ms: \(buckets.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: " "))")
        #expect(busiest <= 330, "the provider saw \(busiest) in one second")
    }

    /// `run --once` (cron) sends its own spool's job with the help of the hosts that run for
    /// good, and takes no other host's chunks: it exits once its own jobs are done.
    @Test func runOnceSendsItsOwnJobAndTakesNoOtherHostsChunks() throws {
        let h = try SharedQueueHarness(devices: 2000, chunkSize: 200)
        try h.start(["b"])
        try h.drop(on: "a", "everyone", Self.broadcast)
        let a = try startPushspool(["run", "--once", "--config", h.dir.path("a.json")], cwd: h.dir.url, env: h.env)
        let c = try h.cli("c", ["run", "--once"])
        #expect(c.status == 0, "\(c.stderr)")
        a.waitUntilExit()
        h.stopAll()
        #expect(a.terminationStatus == 0)
        let summary = h.dir.jsonLines("a/results/everyone.jsonl").last
        #expect(summary?["type"] as? String == "summary" && (summary?["delivered"] as? NSNumber)?.intValue == 2000, "\(summary ?? [:])")
        let shares = try h.chunksByHost("everyone")
        #expect(shares.values.reduce(0, +) == 10)
        #expect(shares.count == 2, "chunks by host: \(shares)")     // a and b, never c
        #expect(h.perToken().values.allSatisfy { $0 == 1 })
    }

    /// `queue.keep_days`: a host deletes the queue's rows of jobs that ended longer ago than kept
    /// when it starts (and hourly after), and says so; a newer job keeps its rows, and the
    /// origin's result log of the old one stays.
    @Test func aHostDeletesTheRowsOfJobsThatEndedLongerAgoThanKept() throws {
        let h = try SharedQueueHarness(hosts: ["a"], devices: 300, chunkSize: 100, delayMS: 0)
        let rows = { (job: String) throws -> [String?] in
            try ["queue_jobs WHERE id", "queue_chunks WHERE job", "queue_outcomes WHERE job"].map {
                try h.query("SELECT count(*) FROM \($0) = $1", [job]).first?.first ?? nil
            }
        }
        for id in ["old", "new"] {
            try h.drop(on: "a", id, Self.broadcast.replacingOccurrences(of: "everyone", with: id))
            let run = try h.cli("a", ["run", "--once", "--log-format", "logfmt"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(!run.stderr.contains("deleted from the shared queue"), "\(run.stderr)")
            let kept = try rows(id)
            #expect(kept[0] == "1" && kept[1] == "3" && Int(kept[2] ?? "0") ?? 0 > 0, "\(id): \(kept)")
        }
        _ = try h.query("UPDATE queue_jobs SET ended_at = ended_at - interval '31 days' WHERE id = 'old'")
        let run = try h.cli("a", ["run", "--once", "--log-format", "logfmt"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("deleted from the shared queue 1 job that ended more than 30 days ago (queue.keep_days)"), "\(run.stderr)")
        #expect(try rows("old") == ["0", "0", "0"])
        #expect(try rows("new")[0...1] == ["1", "3"])
        #expect(h.dir.jsonLines("a/results/old.jsonl").last?["type"] as? String == "summary")
        // A job neither here nor in the queue: the answer says how long the queue keeps them.
        let missing = try h.cli("a", ["results", "elsewhere"])
        #expect(missing.status == 64)
        #expect(missing.stderr.hasSuffix(" (it deletes jobs 30 days after they end: queue.keep_days)\n"), "\(missing.stderr)")
    }
}
