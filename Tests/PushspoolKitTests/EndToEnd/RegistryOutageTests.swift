import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// The PostgreSQL registry goes away in the middle of a campaign: what is in flight finishes,
/// the job waits in active/, and once the database answers again the dispatcher resumes it;
/// every device gets the notification exactly once.
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"))
struct RegistryOutageTests {
    @Test func aCampaignWaitsOutADatabaseRestart() throws {
        // A cluster of its own: this test stops it.
        let cluster = try PostgresCluster()
        try cluster.start()
        let uri = try cluster.createDatabase("outage")
        let dir = TempDir("pg-outage")
        dir.write("pushspool.json", #"{"spool": "spool", "registry": "env:PUSHSPOOL_TEST_REGISTRY", "concurrency": 64}"#)
        let env = ["PUSHSPOOL_TEST_REGISTRY": uri]
        let config = ["--config", dir.path("pushspool.json")]
        #expect(try runPushspool(["init"] + config, env: env).status == 0)
        // Paced (20,000 devices over 20 s) so that the outage surely falls in the middle of the
        // campaign whatever the machine's speed: unpaced, a fast machine sends all of it before
        // the database has finished stopping.
        let n = 20_000
        var jsonl = ""
        for i in 0..<n { jsonl += #"{"id":"d\#(i)","platform":"fcm","handle":"tok-\#(i)","tags":["all"]}"# + "\n" }
        dir.write("devices.jsonl", jsonl)
        let imported = try runPushspool(["import", dir.path("devices.jsonl")] + config, env: env)
        #expect(imported.status == 0, "\(imported.stderr)")
        try Spool(root: dir.url.appendingPathComponent("spool"))
            .submit(Array(#"{"id":"campaign","broadcast":true,"pns":["fcm"],"message":"hello","spread_over_seconds":20}"#.utf8), name: "campaign.json")

        // The dispatcher, what it prints (reports and log lines) collected as it runs.
        let p = try BackgroundRun(["run"] + config, env: env)

        func outboxLines() -> Int { (dir.read("spool/outbox/fcm.jsonl") ?? "").utf8.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) } }
        // What the dispatcher said and where the job is: the facts a timed-out wait needs.
        func facts() -> String {
            "outbox \(outboxLines()) lines; active \(dir.list("spool/active")), done \(dir.list("spool/done")), "
                + "failed \(dir.list("spool/failed")); dispatcher said:\n\(p.tail())"
        }
        guard eventually("the campaign to start sending", timeout: 120, lastSeen: facts, { outboxLines() >= 3000 }) else { return }
        cluster.stop()
        let sentBeforeOutage = outboxLines()
        // Noticed at the dispatcher's next statement (a page of devices, about every second at
        // this pace); the campaign's run then ends once its requests in flight are answered.
        guard eventually("the dispatcher to notice", timeout: 120, lastSeen: facts, { p.output.contains("PostgreSQL unreachable") }),
              eventually("the campaign left in active/", timeout: 120, lastSeen: facts, { p.lines(containing: "job campaign: left in active/") >= 1 })
        else { return }
        let sentDuringOutage = outboxLines()
        // The orphan scan takes the job up again while the database is away: it is left again
        // at its first statement, and nothing more goes out.
        guard eventually("a second try to end with the job left in active/", timeout: 120, lastSeen: facts,
                         { p.lines(containing: "job campaign:") >= 2 }) else { return }
        #expect(outboxLines() == sentDuringOutage)
        #expect(dir.list("spool/active") == ["campaign.json"])
        #expect(sentDuringOutage < n)

        try cluster.start()
        guard eventually("the campaign to finish after the restart", timeout: 180, lastSeen: facts,
                         { dir.list("spool/done").contains("campaign.json") }) else { return }
        p.terminate()
        p.waitUntilExit()

        let devices = dir.jsonLines("spool/outbox/fcm.jsonl").compactMap { $0["device"] as? String }
        #expect(devices.count == n, "sent \(devices.count) of \(n)")
        #expect(Set(devices).count == n, "a device got the campaign twice")
        let summary = dir.jsonLines("spool/results/campaign.jsonl").last { $0["type"] as? String == "summary" }
        #expect(summary?["delivered"] as? Int == n && summary?["status"] as? String == "done")
        let log = p.output
        #expect(log.contains("PostgreSQL answers again"), "\(log)")
        print("registry outage: \(sentBeforeOutage) sent before the database stopped, \(sentDuringOutage) by the time in-flight work finished, "
              + "\(devices.count) in all after the restart; dispatcher log:\n" + log.split(separator: "\n").prefix(6).joined(separator: "\n"))
    }
}
