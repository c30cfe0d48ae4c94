import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// "Nothing is lost": the real binary is killed with SIGKILL in the middle of a campaign to a
/// slow (fake) WNS; the next `run --once` resumes the job from its result log.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct CrashResumeTests {
    @Test func killDashNineMidCampaignThenResume() throws {
        let h = try PushCloudHarness(wnsArgs: ["delay-ms": "40"])
        let count = 120
        try h.register((0..<count).map { ("c\($0)", "wns", WNSIntegrationTests.channel(h.wns, "ok-\($0)")) })
        h.dir.write("pushspool.json", (h.dir.read("pushspool.json") ?? "").replacingOccurrences(of: #""concurrency": 256"#, with: #""concurrency": 4"#))
        try h.submit("campaign", #"{"to_tag": "username:alice", "pns": ["wns"], "message": "m"}"#)

        let p = try startPushspool(["run", "--once", "--config", h.configPath], cwd: h.dir.url, env: ["TEST_WNS_SECRET": PushCloudHarness.clientSecret])
        // Kill once a good part (but not all) of the campaign is logged.
        var waited = 0.0
        while h.deliveries("campaign").count < 30 && waited < 30 { Thread.sleep(forTimeInterval: 0.02); waited += 0.02 }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        let logged = h.deliveries("campaign").count
        #expect(logged >= 30 && logged < count, "killed after \(logged) deliveries")
        #expect(h.dir.list("spool/active") == ["campaign.json"])

        let resume = try h.runOnce()
        #expect(resume.status == 0, "\(resume.stderr)")
        #expect(h.dir.list("spool/done") == ["campaign.json"])
        let d = h.deliveries("campaign")
        #expect(d.count == count)
        #expect(d.values.allSatisfy { $0.str("status") == "delivered" })
        let lines = h.results("campaign")
        #expect(lines.filter { $0["type"] as? String == "job" }.count == 1)
        #expect(lines.filter { $0["type"] as? String == "delivery" }.count == count, "a target was logged twice")
        #expect(h.summary("campaign")?.int("delivered") == count)
        // A line is written before its slot goes to the next target: only requests in flight at
        // the kill (≤ concurrency 4) can reach the service twice.
        let s = try #require(h.wns).state()
        let posts = s.int("posts") ?? 0
        #expect(posts >= count && posts <= count + 4, "posts \(posts)")
    }

    /// `rm -rf results/` in the middle of a campaign: the running job puts its log back from the
    /// open file, finishes with every line, and a re-drop of the same id is still a duplicate.
    @Test func resultsDeletedMidCampaignAreRestored() throws {
        let h = try PushCloudHarness(wnsArgs: ["delay-ms": "150"])
        let count = 80
        try h.register((0..<count).map { ("r\($0)", "wns", WNSIntegrationTests.channel(h.wns, "ok-\($0)")) })
        try h.submit("campaign", #"{"to_tag": "username:alice", "pns": ["wns"], "message": "m"}"#)
        let p = try startPushspool(["run", "--once", "--config", h.configPath], cwd: h.dir.url, env: ["TEST_WNS_SECRET": PushCloudHarness.clientSecret])
        var waited = 0.0
        while h.deliveries("campaign").count < 10 && waited < 30 { Thread.sleep(forTimeInterval: 0.02); waited += 0.02 }
        try FileManager.default.removeItem(atPath: h.dir.path("spool/results"))
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        #expect(h.dir.list("spool/done") == ["campaign.json"])
        let lines = h.results("campaign")
        #expect(lines.filter { $0["type"] as? String == "job" }.count == 1)
        #expect(lines.filter { $0["type"] as? String == "delivery" }.count == count)
        #expect(h.summary("campaign")?.int("delivered") == count)
        try h.submit("campaign", #"{"to_tag": "username:alice", "pns": ["wns"], "message": "m"}"#)
        let again = try h.runOnce()
        #expect(again.stdout.contains("job campaign: duplicate"))
        #expect(try #require(h.wns).state().int("posts") == count)
    }
}
