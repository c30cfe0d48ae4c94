import Foundation
import Testing
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// Steering campaigns with the real binary against the fake APNs: cancel, pause across a
/// restart, the provider rate cap and job pacing, each checked on the fake's side (when each
/// request arrived) and in the result log.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct CampaignControlTests {

    static func answered(_ s: APNsSpool) -> Int { s.fake.state()["answered"] as? Int ?? 0 }

    static func arrivals(_ state: [String: Any]) -> (first: Double, last: Double, perSecond: [Int]) {
        let a = state["arrivals"] as? [String: Any] ?? [:]
        let perSecond = (a["perSecond"] as? [String: Int] ?? [:]).sorted { Int($0.key)! < Int($1.key)! }.map(\.value)
        return ((a["first"] as? Double ?? 0) / 1000, (a["last"] as? Double ?? 0) / 1000, perSecond)
    }

    @Test func cancellingARunningCampaignStopsNewRequestsWithinASecond() throws {
        // 64 streams, each answered after 40 ms: about 1,600/s, so 50,000 take half a minute.
        let s = try APNsSpool(fakeArgs: ["hold-ms": "40", "track-limit": "0"], concurrency: 64)
        try s.importDevices(50_000, tag: "all")
        s.drop("sale", #"{"id":"sale","to_tag":"all","pns":["apns"],"message":"50% off"}"#)
        let run = try startPushspool(["run", "--once"] + s.common)
        defer { if run.isRunning { run.terminate() } }
        eventually("the campaign to get going (3,000 answered)", lastSeen: { "\(Self.answered(s)) answered" }) { Self.answered(s) >= 3_000 }

        let cancel = try s.cli(["cancel", "sale"] + s.common)
        let cancelledAt = Date().timeIntervalSince1970
        #expect(cancel.status == 0, "\(cancel.stderr)")
        #expect(cancel.stdout.contains("cancel requested: job sale (in active/)"), "\(cancel.stdout)")
        eventually("run --once to end once the job is cancelled", timeout: 30) { !run.isRunning }
        #expect(run.terminationStatus == 0)

        let state = waitForIdle(s.fake, answered: 0)
        let (_, last, _) = Self.arrivals(state)
        #expect(last - cancelledAt <= 1.0, "no request started more than 1 s after the cancel (last one \(last - cancelledAt) s after)")
        let summary = s.results("sale").last ?? [:]
        #expect(summary["status"] as? String == "cancelled")
        let delivered = summary["delivered"] as? Int ?? -1, failed = summary["failed"] as? Int ?? -1
        let unregistered = summary["unregistered"] as? Int ?? -1, notSent = summary["not_sent"] as? Int ?? -1
        #expect(delivered + failed + unregistered + notSent == 50_000, "every target is accounted for")
        #expect(notSent > 10_000, "the cancel came early: \(notSent) not sent")
        #expect(delivered == state["tokensDelivered"] as? Int, "every delivery the fake made is in the log")
        #expect(s.results("sale").filter { $0["type"] as? String == "delivery" }.count == delivered + failed + unregistered)
        #expect(FileManager.default.fileExists(atPath: s.dir.path("spool/done/sale.json")))
        #expect(!FileManager.default.fileExists(atPath: s.dir.path("spool/control/sale.cancel")), "the request is removed once acted on")

        // Dropped again with the same id: a cancelled job is complete, not sent again.
        s.drop("sale", #"{"id":"sale","to_tag":"all","pns":["apns"],"message":"50% off"}"#)
        let again = try s.runOnce()
        #expect(again.stdout.contains("duplicate"), "\(again.stdout)")
    }

    @Test func aPausedJobSurvivesARestartAndResumesWithoutResending() throws {
        let s = try APNsSpool(fakeArgs: ["hold-ms": "20", "track-limit": "0"], concurrency: 32)
        try s.importDevices(5_000, tag: "all")
        s.drop("news", #"{"id":"news","to_tag":"all","pns":["apns"],"message":"news"}"#)
        var run = try BackgroundRun(["run"] + s.common)
        eventually("the campaign to get going (800 answered)", lastSeen: { "\(Self.answered(s)) answered" }) { Self.answered(s) >= 800 }

        let pause = try s.cli(["pause", "news"] + s.common)
        #expect(pause.status == 0, "\(pause.stderr)")
        // Paused: the run reports it once the requests in flight are answered, and the fake has
        // answered every request it had and each is in the log (no retries here: one answer each).
        eventually("the dispatcher to report the pause", lastSeen: { run.tail() }) { run.output.contains("job news: paused") }
        let logged = s.deliveries("news").count
        let paused = eventually("the fake to have answered the \(logged) logged deliveries and nothing more", { s.fake.state() },
                               until: { $0["answered"] as? Int == logged && $0["requests"] as? Int == logged })
        let settled = paused["requests"] as? Int ?? -1
        #expect(settled < 5_000)
        let status = try s.cli(["status"] + s.common)
        #expect(status.stdout.contains("paused news"), "\(status.stdout)")

        // The dispatcher stops and starts again: the job stays paused in active/.
        run.terminate()
        run.waitUntilExit()
        #expect(FileManager.default.fileExists(atPath: s.dir.path("spool/active/news.json")))
        run = try BackgroundRun(["run"] + s.common)
        // A job dropped after the restart and run to its end: the new dispatcher has looked at
        // active/ (its first scan takes orphans before incoming/) and left the paused job alone.
        s.drop("probe", #"{"id":"probe","to_tag":"nobody","pns":["apns"],"message":"m"}"#)
        eventually("the restarted dispatcher to run a job dropped after it started", lastSeen: { run.tail() }) {
            FileManager.default.fileExists(atPath: s.dir.path("spool/done/probe.json"))
        }
        #expect(!JobFile.isHeld(s.dir.path("spool/active/news.json").cString(using: .utf8)!), "the paused job is not taken up")
        #expect(s.fake.state()["requests"] as? Int == settled, "nothing is sent while paused, restart or not")
        #expect(s.deliveries("news").count == logged)

        let resume = try s.cli(["resume", "news"] + s.common)
        #expect(resume.status == 0, "\(resume.stderr)")
        eventually("the resumed job to finish", lastSeen: { run.tail() }) { FileManager.default.fileExists(atPath: s.dir.path("spool/done/news.json")) }
        run.terminate()     // its HTTP/2 connection closes: the fake writes its final counts
        run.waitUntilExit()
        let state = waitForIdle(s.fake, answered: 5_000)
        #expect(state["tokensDelivered"] as? Int == 5_000)
        #expect(state["duplicateDeliveries"] as? Int == 0, "no device was notified twice")
        let summary = s.results("news").last ?? [:]
        #expect(summary["status"] as? String == "done")
        #expect(summary["delivered"] as? Int == 5_000)
        #expect(Set(s.deliveries("news").keys).count == 5_000)

        // Unknown and finished ids are errors that say so.
        let unknown = try s.cli(["cancel", "nope"] + s.common)
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("no job with id nope"), "\(unknown.stderr)")
        let ended = try s.cli(["pause", "news"] + s.common)
        #expect(ended.status == 64)
        #expect(ended.stderr.contains("has already ended (done)"), "\(ended.stderr)")
    }

    @Test func aWaitingScheduledJobCanBeCancelled() throws {
        let s = try APNsSpool()
        try s.importDevices(3, tag: "all")
        s.drop("later", #"{"id":"later","to_tag":"all","pns":["apns"],"message":"m","not_before":"2099-01-01T00:00:00Z"}"#)
        let cancel = try s.cli(["cancel", "later"] + s.common)
        #expect(cancel.status == 0, "\(cancel.stderr)")
        #expect(cancel.stdout.contains("waiting in incoming/"))
        let run = try s.runOnce()
        #expect(run.stdout.contains("job later: cancelled — delivered 0, failed 0, unregistered 0, not sent 3"), "\(run.stdout)")
        #expect(s.fake.state()["requests"] as? Int ?? 0 == 0)
        #expect(s.results("later").last?["not_sent"] as? Int == 3)
    }

    @Test func maxPerSecondHoldsOverTenSeconds() throws {
        let s = try APNsSpool(fakeArgs: ["track-limit": "0"], concurrency: 64, apnsExtra: #", "max_per_second": 200"#)
        try s.importDevices(2_000, tag: "all")
        s.drop("capped", #"{"id":"capped","to_tag":"all","pns":["apns"],"message":"m"}"#)
        let run = try s.runOnce()
        #expect(run.status == 0, "\(run.stderr)")
        let state = waitForIdle(s.fake, answered: 2_000)
        let (first, last, perSecond) = Self.arrivals(state)
        #expect(perSecond.reduce(0, +) == 2_000)
        #expect(perSecond.max() ?? 0 <= 220, "no 1-s window above 220: \(perSecond)")
        #expect(last - first >= 9, "2,000 at 200/s take 10 s, took \(last - first)")
    }

    @Test func spreadOverSecondsPacesTheJob() throws {
        let s = try APNsSpool(fakeArgs: ["track-limit": "0"], concurrency: 64)
        try s.importDevices(2_000, tag: "all")
        s.drop("paced", #"{"id":"paced","to_tag":"all","pns":["apns"],"message":"m","spread_over_seconds":20}"#)
        let run = try s.runOnce()
        #expect(run.status == 0, "\(run.stderr)")
        let state = waitForIdle(s.fake, answered: 2_000)
        let (first, last, perSecond) = Self.arrivals(state)
        #expect(perSecond.reduce(0, +) == 2_000)
        #expect(last - first >= 18, "first and last deliveries \(last - first) s apart")
        let mean = 2_000.0 / max(1, last - first)
        #expect(Double(perSecond.max() ?? 0) <= 3 * mean, "no 1-s window above 3× the mean (\(mean)): \(perSecond)")
    }
}
