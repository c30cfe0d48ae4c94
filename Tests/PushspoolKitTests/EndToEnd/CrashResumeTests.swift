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
        eventually("30 deliveries logged", timeout: 30, lastSeen: { "\(h.deliveries("campaign").count) logged" }) { h.deliveries("campaign").count >= 30 }
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
        eventually("10 deliveries logged", timeout: 30, lastSeen: { "\(h.deliveries("campaign").count) logged" }) { h.deliveries("campaign").count >= 10 }
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

/// kill -9 at random points of a 10,000-device campaign to a fake APNs that holds each answer,
/// from the first milliseconds (the claim) to the end (the final move), each followed by a
/// resume: every device is notified, a crash resends at most the requests in flight
/// (≤ `concurrency`), each device has exactly one final line, and the job ends in `done/`.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct KillNineTests {
    @Test func killedAtRandomPointsThenResumed() throws {
        let concurrency = 128
        let devices = 10_000
        let s = try APNsSpool(fakeArgs: ["hold-ms": "25", "track-limit": "0"], concurrency: concurrency)
        try s.importDevices(devices, tag: "all")
        // One full run first, to know how long a campaign takes here (a debug build is slower).
        s.drop("warmup", #"{"id":"warmup","to_tag":"all","pns":["apns"],"message":"m"}"#)
        let started = Date()
        #expect(try s.runOnce().status == 0)
        let campaign = Date().timeIntervalSince(started)
        let warm = waitForIdle(s.fake, answered: devices)
        #expect(warm["tokensDelivered"] as? Int == devices && warm["duplicateDeliveries"] as? Int == 0)

        var generator = SystemRandomNumberGenerator()
        var measured: [String] = []
        let points = [0.005, 0.05] + (0..<3).map { _ in Double.random(in: 0.1...0.9, using: &generator) } + [0.98]
        for (k, fraction) in points.enumerated() {
            let id = "c\(k)"
            s.drop(id, #"{"id":"\#(id)","to_tag":"all","pns":["apns"],"message":"m\#(k)"}"#)
            let before = s.fake.state()
            let p = try startPushspool(["run", "--once"] + s.common)
            usleep(useconds_t(campaign * fraction * 1_000_000))
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            let resumed = try s.runOnce()
            #expect(resumed.status == 0, "\(resumed.stderr)")
            let after = waitForIdle(s.fake, answered: 0)
            // The fake counts a device twice across jobs too: compare with this job's share.
            let newDeliveries = (after["tokensDelivered"] as? Int ?? 0) - (before["tokensDelivered"] as? Int ?? 0)
            let newDuplicates = (after["duplicateDeliveries"] as? Int ?? 0) - (before["duplicateDeliveries"] as? Int ?? 0)
            #expect(newDeliveries == devices, "kill at \(Int(fraction * 100))%: every device received it")
            #expect(newDuplicates <= concurrency, "kill at \(Int(fraction * 100))%: \(newDuplicates) resent, more than the \(concurrency) in flight")
            measured.append("\(String(format: "%.1f", fraction * 100))%: \(newDuplicates)")
            let finals = s.results(id).filter { $0["type"] as? String == "delivery" }
            let perDevice = Dictionary(grouping: finals, by: { $0["device"] as? String ?? "" })
            #expect(finals.count == devices, "kill at \(Int(fraction * 100))%: \(finals.count) final lines")
            #expect(perDevice.count == devices && perDevice.values.allSatisfy { $0.count == 1 }, "one final line per device")
            #expect(finals.allSatisfy { $0["status"] as? String == "delivered" })
            #expect(s.results(id).last?["status"] as? String == "done")
            #expect(FileManager.default.fileExists(atPath: s.dir.path("spool/done/\(id).json")))
            #expect(s.dir.list("spool/active").isEmpty)
        }
        print("kill -9 (\(devices) devices, concurrency \(concurrency), campaign \(String(format: "%.1f", campaign)) s): "
              + "resent per kill point " + measured.joined(separator: ", "))
    }
}

/// Two dispatchers on one spool, 300 jobs; one is killed with SIGKILL mid-way. The other takes
/// over the dead one's jobs (their locks died with it) within seconds: every job ends in `done/`
/// once, with one final line per device, and nothing stays in `active/`.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct TakeoverTests {
    @Test func aSurvivingDispatcherFinishesTheDeadOnesJobs() throws {
        let s = try APNsSpool(fakeArgs: ["hold-ms": "30", "track-limit": "0"], concurrency: 32)
        try s.importDevices(20, tag: "all")
        for i in 0..<300 { s.drop("j\(i)", #"{"id":"j\#(i)","to_tag":"all","pns":["apns"],"message":"m\#(i)"}"#) }
        let a = try startPushspool(["run"] + s.common)
        let b = try startPushspool(["run"] + s.common)
        defer { [a, b].forEach { if $0.isRunning { $0.terminate() } } }
        eventually("60 jobs done", lastSeen: { "\(s.dir.list("spool/done").count) done" }) { s.dir.list("spool/done").count >= 60 }
        kill(a.processIdentifier, SIGKILL)
        a.waitUntilExit()
        let killedAt = Date()
        let stranded = s.dir.list("spool/active").count
        eventually("all 300 jobs done", timeout: 90, lastSeen: { "done \(s.dir.list("spool/done").count), active \(s.dir.list("spool/active"))" }) {
            s.dir.list("spool/done").count == 300 && s.dir.list("spool/active").isEmpty
        }
        print("takeover: \(stranded) jobs in active/ at the kill; all 300 done \(Int(Date().timeIntervalSince(killedAt))) s after it")
        b.terminate()
        b.waitUntilExit()
        for i in 0..<300 {
            let lines = s.results("j\(i)")
            let finals = lines.filter { $0["type"] as? String == "delivery" }
            #expect(Set(finals.compactMap { $0["device"] as? String }).count == 20 && finals.count == 20, "j\(i): \(finals.count) final lines")
            #expect(lines.last?["status"] as? String == "done", "j\(i)")
        }
        #expect(s.dir.list("spool/done").allSatisfy { !$0.contains("duplicate") }, "no job ran twice")
        let state = waitForIdle(s.fake, answered: 0)
        #expect(state["tokensDelivered"] as? Int == 300 * 20)
        #expect((state["duplicateDeliveries"] as? Int ?? 999) <= 32, "resent at most what the dead one had in flight")
    }
}
