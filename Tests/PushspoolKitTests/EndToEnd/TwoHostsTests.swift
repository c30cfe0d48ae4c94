import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// Two dispatchers, each on a spool of its own (two hosts), sharing one PostgreSQL registry,
/// through the real binary and the sandbox provider.
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"), .serialized)
struct TwoHostsTests {
    /// Two host configs (spools `a` and `b`) on one registry, both spools initialised.
    struct Hosts {
        let dir = TempDir("two-hosts")
        let uri: String
        var env: [String: String] { ["PUSHSPOOL_TEST_REGISTRY": uri] }

        init(uri: String) throws {
            self.uri = uri
            for host in ["a", "b"] {
                dir.write("\(host).json", #"{"spool": "\#(host)", "registry": "env:PUSHSPOOL_TEST_REGISTRY", "concurrency": 64}"#)
                let r = try runPushspool(["init", "--config", dir.path("\(host).json")], env: env)
                guard r.status == 0 else { throw FakeServer.FakeError(message: "init \(host): \(r.stderr)") }
            }
        }

        func config(_ host: String) -> [String] { ["--config", dir.path("\(host).json")] }

        func spool(_ host: String) throws -> Spool { try Spool(root: dir.url.appendingPathComponent(host)) }

        /// `n` fcm devices `d<from>…` with the tag `all`, as JSON Lines.
        func devices(_ name: String, from: Int, count n: Int) -> URL {
            var text = ""
            text.reserveCapacity(n * 70)
            for i in from..<(from + n) { text += #"{"id":"d\#(i)","platform":"fcm","handle":"tok-\#(i)","tags":["all"]}"# + "\n" }
            dir.write(name, text)
            return dir.url.appendingPathComponent(name)
        }

        /// Outbox lines per job id on one host.
        func outbox(_ host: String) -> [String: [String]] {
            var byJob: [String: [String]] = [:]
            for line in dir.jsonLines("\(host)/outbox/fcm.jsonl") {
                guard let job = line["job"] as? String else { continue }
                byJob[job, default: []].append((line["device"] as? String) ?? (line["id"] as? String) ?? "")
            }
            return byJob
        }

        func start(_ host: String, once: Bool = true, stderr: Pipe? = nil) throws -> Process {
            try startPushspool(["run"] + (once ? ["--once"] : []) + config(host), env: env, stderr: stderr)
        }
    }

    @Test func aJobDroppedOnBothHostsIsSentOnce() throws {
        let hosts = try Hosts(uri: try RegistryFixture.postgresDatabase())
        let imported = try runPushspool(["import", hosts.devices("devices.jsonl", from: 0, count: 20).path] + hosts.config("a"), env: hosts.env)
        #expect(imported.status == 0, "\(imported.stderr)")
        for host in ["a", "b"] {
            let spool = try hosts.spool(host)
            for j in 0..<100 {
                try spool.submit(Array(#"{"id":"job-\#(j)","to_tag":"all","pns":["fcm"],"message":"m\#(j)"}"#.utf8), name: "job-\(j).json")
            }
        }
        let a = try hosts.start("a"), b = try hosts.start("b")
        a.waitUntilExit()
        b.waitUntilExit()
        #expect(a.terminationStatus == 0 && b.terminationStatus == 0)

        let (outA, outB) = (hosts.outbox("a"), hosts.outbox("b"))
        var sentBy = ["a": 0, "b": 0]
        for j in 0..<100 {
            let id = "job-\(j)"
            let lines = (outA[id] ?? []) + (outB[id] ?? [])
            #expect(lines.count == 20, "\(id) sent \(lines.count) times to 20 devices")
            #expect(outA[id] == nil || outB[id] == nil, "\(id) sent from both hosts")
            sentBy[outA[id] != nil ? "a" : "b", default: 0] += 1
        }
        // The host that lost the claim reports a duplicate, as one host does for a re-dropped job.
        let duplicates = hosts.dir.list("a/done").filter { $0.hasSuffix(".duplicate.json") }.count
            + hosts.dir.list("b/done").filter { $0.hasSuffix(".duplicate.json") }.count
        #expect(duplicates == 100)
        #expect(hosts.dir.list("a/done").count + hosts.dir.list("b/done").count == 200)
        #expect(hosts.dir.list("a/failed").isEmpty && hosts.dir.list("b/failed").isEmpty)
        #expect(hosts.dir.list("a/active").isEmpty && hosts.dir.list("b/active").isEmpty)
        print("two hosts: 100 jobs on both spools, sent by a: \(sentBy["a"]!), by b: \(sentBy["b"]!), duplicates: \(duplicates)")
    }

    /// Both hosts send to the fake APNs with one key: one provider token between them (each
    /// spool's `.state/` would have given two), verified by the fake.
    @Test(.enabled(if: Paths.nodeAvailable)) func bothHostsUseOneAPNsToken() throws {
        let uri = try RegistryFixture.postgresDatabase()
        let dir = TempDir("two-hosts-apns")
        let fake = try FakeServer("apns", dir: dir)
        dir.write("AuthKey_TESTKEY123.p8", try String(contentsOf: Paths.fixture("AuthKey_TESTKEY123.p8"), encoding: .utf8), mode: 0o600)
        let env = ["PUSHSPOOL_TEST_REGISTRY": uri]
        for host in ["a", "b"] {
            dir.write("\(host).json", """
                {"spool": "\(host)", "registry": "env:PUSHSPOOL_TEST_REGISTRY", "concurrency": 32,
                 "routes": {"apns": "apns"},
                 "providers": {"apns": {"team_id": "TEAMID1234", "key_id": "TESTKEY123", "key_file": "AuthKey_TESTKEY123.p8",
                                        "topic": "com.example.app", "environment": "production", "endpoint": "\(fake.url)"}},
                 "tls": {"ca_file": "\(Paths.fixture("ca.pem").path)"}}
                """)
            #expect(try runPushspool(["init", "--config", dir.path("\(host).json")], env: env).status == 0)
        }
        var lines = ""
        for i in 0..<100 { lines += #"{"id":"d\#(i)","platform":"apns","handle":"\#(String(format: "%064x", i))","tags":["all"]}"# + "\n" }
        dir.write("devices.jsonl", lines)
        #expect(try runPushspool(["import", dir.path("devices.jsonl"), "--config", dir.path("a.json")], env: env).status == 0)
        for host in ["a", "b"] {
            try Spool(root: dir.url.appendingPathComponent(host))
                .submit(Array(#"{"id":"from-\#(host)","to_tag":"all","pns":["apns"],"message":"hi"}"#.utf8), name: "from-\(host).json")
        }
        let a = try startPushspool(["run", "--once", "--config", dir.path("a.json")], env: env)
        let b = try startPushspool(["run", "--once", "--config", dir.path("b.json")], env: env)
        a.waitUntilExit()
        b.waitUntilExit()
        #expect(a.terminationStatus == 0 && b.terminationStatus == 0)
        fake.stop()
        let state = fake.state()
        // 100 devices, two jobs (one per host): each device got each job's notification once.
        #expect(state["answered"] as? Int == 200 && state["tokensDelivered"] as? Int == 200, "\(state)")
        #expect(state["duplicateDeliveries"] as? Int == 0, "\(state)")
        #expect(state["jwts"] as? Int == 1, "\(state)")
        #expect(state["badJWTs"] as? Int == 0)
        #expect(dir.list("a/.state").filter { $0.hasSuffix(".json") }.isEmpty, "the token is kept in the database, not the spool")
    }

    @Test func aCampaignOnOneHostWhileTheOtherImports() throws {
        let hosts = try Hosts(uri: try RegistryFixture.postgresDatabase())
        let first = try runPushspool(["import", hosts.devices("first.jsonl", from: 0, count: 50_000).path] + hosts.config("a"), env: hosts.env)
        #expect(first.status == 0 && first.stdout.contains("imported 50000 devices"), "\(first.stderr)")
        let more = hosts.devices("more.jsonl", from: 50_000, count: 50_000)
        try hosts.spool("a").submit(Array(#"{"id":"campaign","broadcast":true,"pns":["fcm"],"message":"hello"}"#.utf8), name: "campaign.json")

        let errA = Pipe()
        let started = Date()
        let campaign = try hosts.start("a", stderr: errA)
        // The import starts once the campaign is sending.
        eventually("the campaign to start sending", timeout: 60) { hosts.dir.read("a/outbox/fcm.jsonl") != nil }
        let importing = try runPushspool(["import", more.path] + hosts.config("b"), env: hosts.env)
        let importDone = Date()
        campaign.waitUntilExit()
        let campaignDone = Date()
        let stderrA = String(decoding: readToEnd(errA.fileHandleForReading.fileDescriptor), as: UTF8.self)

        #expect(importing.status == 0 && importing.stdout.contains("imported 50000 devices"), "\(importing.stderr)")
        #expect(campaign.terminationStatus == 0, "\(stderrA)")
        #expect(!stderrA.contains("error"), "\(stderrA)")
        let sent = hosts.outbox("a")["campaign"] ?? []
        let summary = hosts.dir.jsonLines("a/results/campaign.jsonl").last { $0["type"] as? String == "summary" }
        let delivered = ((summary?["delivered"] as? Int) ?? (summary?["tally"] as? [String: Any])?["delivered"] as? Int) ?? -1
        // Every device registered when the campaign started got it exactly once; devices
        // imported meanwhile may or may not have (the stream reaches them if it is still going).
        #expect(Set(sent).count == sent.count, "a device got the campaign twice")
        #expect(sent.count >= 50_000 && sent.count <= 100_000)
        #expect(delivered == sent.count, "summary \(String(describing: summary))")
        let count = try runPushspool(["devices", "--count"] + hosts.config("b"), env: hosts.env)
        #expect(count.stdout == "100000\n")
        print("two hosts: campaign sent \(sent.count) in \(String(format: "%.1f", campaignDone.timeIntervalSince(started))) s "
              + "while the other host imported 50000 (done after \(String(format: "%.1f", importDone.timeIntervalSince(started))) s)")
    }
}
