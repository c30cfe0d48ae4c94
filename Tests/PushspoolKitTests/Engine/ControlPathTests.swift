import Foundation
import Synchronization
import Testing
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// `status` and `resume` tell the truth about the dispatcher, with the real binary: a dispatcher
/// stopped with SIGSTOP is reported as not responding (its heartbeat), two resumes at once both
/// succeed, and `resume` returns once the dispatcher has acknowledged it.
@Suite(.serialized)
struct ControlPathTests {
    /// A sandbox spool with a slow (paced) job running under `pushspool run`.
    static func pacedCampaign(devices: Int, seconds: Int) throws -> (SandboxSpool, Process) {
        let s = try SandboxSpool(devices: devices)
        s.dir.write("spool/incoming/paced.json", #"{"id":"paced","to_tag":"all","pns":"fcm","message":"m","spread_over_seconds":\#(seconds)}"#)
        let run = try startPushspool(["run"] + s.common)
        eventually("the campaign to get going (2 sent)", timeout: 30) { s.sent("paced").count >= 2 }
        return (s, run)
    }

    /// When the sandbox sent each push of `job` (its outbox lines' `at`), seconds since the epoch.
    static func pushTimes(_ s: SandboxSpool, job: String) -> [Double] {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return s.dir.jsonLines("spool/outbox/fcm.jsonl").filter { $0["job"] as? String == job }
            .compactMap { ($0["at"] as? String).flatMap { format.date(from: $0)?.timeIntervalSince1970 } }
    }

    static func statusJSON(_ s: SandboxSpool) throws -> (doc: [String: Any], seconds: Double) {
        let started = Date()
        let r = try runPushspool(["status", "--json"] + s.common)
        let seconds = Date().timeIntervalSince(started)
        #expect(r.status == 0, "\(r.stderr)")
        return ((try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any] ?? [:], seconds)
    }

    @Test func statusSaysWhenTheDispatcherStopsResponding() throws {
        let (s, run) = try Self.pacedCampaign(devices: 200, seconds: 100)
        defer { kill(run.processIdentifier, SIGCONT); if run.isRunning { run.terminate() }; run.waitUntilExit() }
        let pid = Int(run.processIdentifier)

        var (doc, seconds) = try Self.statusJSON(s)
        var dispatcher = doc["dispatcher"] as? [String: Any] ?? [:]
        #expect(dispatcher["pid"] as? Int == pid && dispatcher["responding"] as? Bool == true, "\(doc)")
        #expect((doc["active"] as? [[String: Any]])?.first?["state"] as? String == "running", "\(doc)")

        kill(run.processIdentifier, SIGSTOP)
        let stoppedAt = Date()
        eventually("status to say the stopped dispatcher is not responding", timeout: 30, poll: 0.05) {
            (((try? Self.statusJSON(s))?.doc["dispatcher"] as? [String: Any])?["responding"] as? Bool) == false
        }
        print("status: a dispatcher stopped with SIGSTOP shown as not responding \(String(format: "%.1f", Date().timeIntervalSince(stoppedAt))) s after the stop (threshold \(DispatcherPresence.respondingWithin) s)")
        (doc, seconds) = try Self.statusJSON(s)
        dispatcher = doc["dispatcher"] as? [String: Any] ?? [:]
        let age = dispatcher["heartbeat_age_s"] as? Int ?? -1
        #expect(dispatcher["pid"] as? Int == pid && age >= Int(DispatcherPresence.respondingWithin), "\(dispatcher)")
        let job = (doc["active"] as? [[String: Any]])?.first ?? [:]
        #expect(job["state"] as? String == "not responding" && job["rate_per_s"] is NSNull, "no rate for a stalled job: \(job)")
        let text = try runPushspool(["status"] + s.common)
        #expect(text.stdout.contains("dispatcher pid \(pid) not responding (no heartbeat for "), "\(text.stdout)")
        #expect(text.stdout.range(of: #", \d+/s"#, options: .regularExpression) == nil, "no rate while stalled: \(text.stdout)")
        print("status answered in \(String(format: "%.3f", seconds)) s with the dispatcher stopped")
        #expect(seconds < 2, "status took \(seconds) s")

        // A resume meanwhile does not wait for it, and does not claim that no dispatcher runs.
        #expect(try runPushspool(["pause", "paced"] + s.common).status == 0)
        let resume = try runPushspool(["resume", "paced"] + s.common)
        #expect(resume.status == 0 && resume.stdout.contains("dispatcher pid \(pid) has not acknowledged it yet"), "\(resume)")

        // It goes on: responding again at its next beat.
        kill(run.processIdentifier, SIGCONT)
        eventually("status to say the continued dispatcher responds", timeout: 30, poll: 0.05) {
            (((try? Self.statusJSON(s))?.doc["dispatcher"] as? [String: Any])?["responding"] as? Bool) == true
        }
        // Stopped cleanly: no dispatcher, and its record is gone.
        run.terminate()
        run.waitUntilExit()
        (doc, _) = try Self.statusJSON(s)
        #expect(doc["dispatcher"] is NSNull && (doc["dispatchers"] as? [Any])?.isEmpty == true, "\(doc)")
        #expect(try runPushspool(["status"] + s.common).stdout.contains("no dispatcher running"))
    }

    @Test func twoResumesAtOnceBothSucceedAndReturnOnceTheDispatcherActed() throws {
        // 40 pushes a second: one every 25 ms, the resolution of the pause's latency below.
        let (s, run) = try Self.pacedCampaign(devices: 400, seconds: 10)
        defer { if run.isRunning { run.terminate() }; run.waitUntilExit() }
        #expect(try runPushspool(["pause", "paced"] + s.common).status == 0)
        let pausedAt = Date().timeIntervalSince1970
        eventually("status to show the job paused", timeout: 30, poll: 0.05) {
            ((try? Self.statusJSON(s))?.doc["active"] as? [[String: Any]])?.first?["state"] as? String == "paused"
        }
        let before = s.sent("paced").count
        let times = Self.pushTimes(s, job: "paced")
        #expect(times.count == before, "every push has its time")
        let lastPush = times.max() ?? .infinity
        print("pause: the last push went out \(Int(max(0, lastPush - pausedAt) * 1000)) ms after the pause command returned")
        #expect(lastPush - pausedAt < 1, "pushes went on \(lastPush - pausedAt) s after the pause")

        // Two operators resume at the same moment.
        let started = Date()
        let results = Mutex<[RunResult]>([])
        let group = DispatchGroup()
        let resume = ["resume", "paced"] + s.common
        for _ in 0..<2 {
            DispatchQueue.global().async(group: group) {
                if let r = try? runPushspool(resume) { results.withLock { $0.append(r) } }
            }
        }
        group.wait()
        let returned = Date().timeIntervalSince(started)
        let both = results.withLock { $0 }
        #expect(both.count == 2 && both.allSatisfy { $0.status == 0 }, "\(both)")
        let acknowledged = both.filter { $0.stdout.contains("dispatcher pid \(run.processIdentifier) continues it") }
        #expect(acknowledged.count == 1, "one resume removed the pause and saw it acknowledged: \(both.map(\.stdout))")
        #expect(both.contains { $0.stdout.contains("is not paused: nothing to resume") } || acknowledged.count == 2, "\(both.map(\.stdout))")
        // Acknowledged means acting: the next target goes out at once (pacing does not wait
        // for the targets sent before the pause).
        eventually("the resumed job to send again", timeout: 30) { s.sent("paced").count > before }
        let firstSend = Date().timeIntervalSince(started)
        print("resume: both commands returned after \(String(format: "%.3f", returned)) s; the next push went out \(String(format: "%.3f", firstSend)) s after the resume (process start-up included)")
        #expect(firstSend < 3, "the resumed job sent again only after \(firstSend) s")
        #expect(s.dir.list("spool/control").isEmpty, "no marker left behind: \(s.dir.list("spool/control"))")

        // Resuming what is not paused: a no-op, exit 0.
        let again = try runPushspool(["resume", "paced"] + s.common)
        #expect(again.status == 0 && again.stdout.contains("is not paused"), "\(again)")
    }

    /// Resumed while the pause is still taking effect (the requests in flight take 1.5 s to be
    /// answered, and a paced job has them at staggered times): the job goes on as soon as they
    /// are answered, not at the dispatcher's next look at `active/` (every 5 s).
    @Test(.enabled(if: Paths.nodeAvailable)) func aResumeDuringThePauseTakesEffectOnceInFlightRequestsEnd() throws {
        let s = try APNsSpool(fakeArgs: ["hold-ms": "1500", "track-limit": "0"], concurrency: 16)
        try s.importDevices(200, tag: "all")
        // One request every 250 ms, each answered after 1.5 s: about 6 in flight at any moment.
        s.drop("slow", #"{"id":"slow","to_tag":"all","pns":["apns"],"message":"m","spread_over_seconds":50}"#)
        let run = try startPushspool(["run"] + s.common)
        defer { if run.isRunning { run.terminate() }; run.waitUntilExit() }
        func lastArrival() -> Double { CampaignControlTests.arrivals(s.fake.state()).last }
        eventually("the campaign to get going (4 answered)", timeout: 30) { CampaignControlTests.answered(s) >= 4 }
        #expect(try runPushspool(["pause", "slow"] + s.common).status == 0)
        // The pause is seen; the requests in flight are still being answered.
        eventually("status to show the job paused", timeout: 30, poll: 0.05) {
            let r = try? runPushspool(["status", "--json"] + s.common)
            let doc = r.flatMap { try? JSONSerialization.jsonObject(with: Data($0.stdout.utf8)) as? [String: Any] }
            return (doc?["active"] as? [[String: Any]])?.first?["state"] as? String == "paused"
        }
        let resumedAt = Date()
        let resume = try runPushspool(["resume", "slow"] + s.common)
        #expect(resume.status == 0 && resume.stdout.contains("continues it"), "\(resume)")
        eventually("the resumed job to send again", timeout: 30) { lastArrival() > resumedAt.timeIntervalSince1970 }
        let latency = Date().timeIntervalSince(resumedAt)
        print("resume while a pause waits for 1.5 s requests in flight: sending again \(String(format: "%.2f", latency)) s after the resume")
        #expect(latency < 4, "the job waited \(latency) s for the dispatcher's next look at active/")
    }

    /// The heartbeat records' folder on a full disk (a tmpfs filled up): the record cannot be
    /// rewritten, but the dispatcher works, and `status` must not say it stopped responding.
    @Test(.enabled(if: MountProbe.canMountTmpfs)) func aFullDiskDoesNotMakeAWorkingDispatcherLookStalled() throws {
        let s = try SandboxSpool(devices: 3)
        let records = s.dir.path("spool/.state/dispatchers")
        mkdir(records, 0o700)
        try #require(MountProbe.sh(["mount", "-t", "tmpfs", "-o", "size=16k,mode=0700", "tmpfs", records]) == 0, "mount failed")
        defer { _ = MountProbe.sh(["umount", records]) }
        let run = try startPushspool(["run"] + s.common)
        defer { if run.isRunning { run.terminate() }; run.waitUntilExit() }
        eventually("the dispatcher's presence record", timeout: 30) { s.dir.list("spool/.state/dispatchers").count == 1 }
        // Fill what is left (dd stops at ENOSPC): from now on the record cannot be rewritten.
        _ = MountProbe.sh(["dd", "if=/dev/zero", "of=\(records)/.filler", "bs=1k", "count=64"])
        var st = statvfs()
        #expect(statvfs(records, &st) == 0 && st.f_bavail == 0, "the folder is full")
        // The record's content cannot be rewritten now: its heartbeat ages past what a
        // responding dispatcher's may be, while the dispatcher sets the file's time instead.
        let path = "\(records)/\(try #require(s.dir.list("spool/.state/dispatchers").first { !$0.hasPrefix(".") }))"
        func heartbeatAge() -> Double {
            (try? FileIO.readAll(URL(fileURLWithPath: path))).flatMap { DispatcherRecord($0) }.map { Date().timeIntervalSince($0.heartbeat) } ?? 0
        }
        eventually("the record's heartbeat to age past \(DispatcherPresence.respondingWithin) s", timeout: 60, poll: 0.1,
                   lastSeen: { "\(heartbeatAge()) s" }) { heartbeatAge() > DispatcherPresence.respondingWithin + 0.5 }
        let (doc, _) = try Self.statusJSON(s)
        let dispatcher = doc["dispatcher"] as? [String: Any] ?? [:]
        #expect(dispatcher["pid"] as? Int == Int(run.processIdentifier) && dispatcher["responding"] as? Bool == true, "\(doc)")
    }

    /// A record left by a killed dispatcher whose pid now belongs to another process (started
    /// after the record's last heartbeat) is a leftover, not a dispatcher that stopped responding.
    @Test func aRecordWhosePidWasReusedIsNoDispatcher() throws {
        let s = try SandboxSpool(devices: 1)
        let records = s.dir.path("spool/.state/dispatchers")
        mkdir(records, 0o700)
        let stale = DispatcherRecord(pid: 0, instance: "killed", heartbeat: Date().addingTimeInterval(-30))
        let other = Process()
        other.executableURL = URL(fileURLWithPath: "/bin/sleep")
        other.arguments = ["30"]
        other.standardInput = FileHandle.nullDevice
        other.standardOutput = FileHandle.nullDevice
        other.standardError = FileHandle.nullDevice
        try other.run()
        defer { kill(other.processIdentifier, SIGKILL); other.waitUntilExit() }
        var record = stale
        record.pid = other.processIdentifier
        s.dir.write("spool/.state/dispatchers/killed.json", String(decoding: record.encoded(), as: UTF8.self))
        let (doc, _) = try Self.statusJSON(s)
        #expect(doc["dispatcher"] is NSNull, "\(doc)")
        #expect(try runPushspool(["status"] + s.common).stdout.contains("no dispatcher running"))
    }

    @Test func resumeWithNoDispatcherSaysSoAtOnce() throws {
        let s = try SandboxSpool(devices: 3)
        s.dir.write("spool/incoming/later.json", #"{"id":"later","to_tag":"all","pns":"fcm","message":"m","not_before":"2099-01-01T00:00:00Z"}"#)
        #expect(try runPushspool(["pause", "later"] + s.common).status == 0)
        let r = try runPushspool(["resume", "later"] + s.common)
        #expect(r.status == 0 && r.stdout.contains("no dispatcher is running"), "\(r)")
        #expect(s.dir.list("spool/control").isEmpty)
        #expect(try runPushspool(["resume", "nope"] + s.common).status == 64, "an unknown id is still an error")
    }
}
