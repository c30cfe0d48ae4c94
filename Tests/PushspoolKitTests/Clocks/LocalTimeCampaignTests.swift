import Foundation
import Testing

/// `local_time` jobs through the real binary, on an injected clock (`PUSHSPOOL_TEST_CLOCK`: a
/// start instant and a speed), sent to the sandbox provider: no test waits for a real 09:00.
/// Each device's delivery is checked against the result log's wave lines: a device is sent in
/// the wave whose instant is 09:00 on its own clock, once.
@Suite(.serialized) struct LocalTimeCampaignTests {
    /// Six zones: +5:45, +5:30, +1, UTC, and two that enter DST on 2027-03-14 (New York at
    /// 07:00Z, Los Angeles at 10:00Z), so 09:00 there is already EDT/PDT.
    static let zones: [(zone: String, nine: String)] = [
        ("Asia/Kathmandu", "2027-03-14T03:15:00.000Z"), ("Asia/Kolkata", "2027-03-14T03:30:00.000Z"),
        ("Europe/Paris", "2027-03-14T08:00:00.000Z"), ("UTC", "2027-03-14T09:00:00.000Z"),
        ("America/New_York", "2027-03-14T13:00:00.000Z"), ("America/Los_Angeles", "2027-03-14T16:00:00.000Z"),
    ]
    static let job = #"{"id": "nine", "broadcast": true, "pns": ["fcm"], "message": "good morning", "local_time": "09:00", "local_date": "2027-03-14"}"#

    /// A spool with 4 devices in each zone (and 2 with no tz: UTC, the default), ready to run.
    static func spool(_ name: String, config: String = #"{"spool": "spool"}"#) throws -> (TempDir, [String]) {
        let dir = TempDir(name)
        dir.write("pushspool.json", config)
        let common = ["--spool", dir.path("spool"), "--config", dir.path("pushspool.json")]
        try initSpool(common)
        var lines = ""
        for (z, entry) in zones.enumerated() {
            for i in 0..<4 { lines += #"{"id":"d\#(z)-\#(i)","platform":"fcm","handle":"tok-\#(z)-\#(i)","tags":[],"tz":"\#(entry.zone)"}"# + "\n" }
        }
        lines += #"{"id":"plain-0","platform":"fcm","handle":"tok-p0","tags":[]}"# + "\n" + #"{"id":"plain-1","platform":"fcm","handle":"tok-p1","tags":[]}"# + "\n"
        dir.write("devices.jsonl", lines)
        let r = try runPushspool(["import"] + common + [dir.path("devices.jsonl")], cwd: dir.url)
        #expect(r.status == 0, "\(r.stderr)")
        return (dir, common)
    }

    /// Device id → the instant of the wave it was delivered in (the next `sent` wave line after
    /// its delivery line), and how many times each device was delivered.
    static func deliveries(_ dir: TempDir, job: String = "nine") -> (wave: [String: String], times: [String: Int], waves: [[String: Any]]) {
        var pending: [String] = [], wave: [String: String] = [:], times: [String: Int] = [:], waves: [[String: Any]] = []
        for line in dir.jsonLines("spool/results/\(job).jsonl") {
            if line["type"] as? String == "delivery", let device = line["device"] as? String {
                pending.append(device)
                times[device, default: 0] += 1
            } else if line["type"] as? String == "wave", line["status"] as? String != "planned" {
                waves.append(line)
                for d in pending { wave[d] = line["at"] as? String }
                pending = []
            }
        }
        return (wave, times, waves)
    }

    static func expectEachAtNine(_ dir: TempDir) {
        let (wave, times, waves) = deliveries(dir)
        for (z, entry) in zones.enumerated() {
            for i in 0..<4 { #expect(wave["d\(z)-\(i)"] == entry.nine, "d\(z)-\(i) in \(entry.zone)") }
        }
        #expect(wave["plain-0"] == "2027-03-14T09:00:00.000Z" && wave["plain-1"] == "2027-03-14T09:00:00.000Z")
        #expect(times.count == 26 && times.values.allSatisfy { $0 == 1 }, "\(times.filter { $0.value != 1 })")
        // One wave per distinct instant (Paris alone at 08:00, UTC and the devices without tz at 09:00).
        #expect(waves.count == 6 && waves.allSatisfy { $0["status"] as? String == "sent" }, "\(waves)")
        #expect(dir.jsonLines("spool/results/nine.jsonl").last?["delivered"] as? Int == 26)
    }

    /// One dispatcher, the clock at 3 h a second from 03:00Z: six waves, each device at its 09:00.
    @Test func sixZonesEachReceiveAtTheirNineOClock() throws {
        let (dir, common) = try Self.spool("clocks-six")
        dir.write("spool/incoming/nine.json", Self.job)
        try Self.runUntilDone(dir, common, clock: "2027-03-14T03:00:00Z*10800")
        Self.expectEachAtNine(dir)
    }

    /// A dispatcher on the clock `clock` until the job `nine` is done.
    static func runUntilDone(_ dir: TempDir, _ common: [String], clock: String) throws {
        let run = try BackgroundRun(["run"] + common, cwd: dir.url, env: ["PUSHSPOOL_TEST_CLOCK": clock])
        #expect(eventually("the job to end", timeout: 60, lastSeen: { run.tail() }) {
            FileManager.default.fileExists(atPath: dir.path("spool/done/nine.json"))
        })
        run.terminate()
        run.waitUntilExit()
    }

    /// Stopped between waves (after Paris, before UTC) and started again: nothing is sent twice,
    /// no wave is skipped, and `status` shows the next wave meanwhile.
    @Test func aRestartBetweenWavesResendsNothingAndSkipsNothing() throws {
        let (dir, common) = try Self.spool("clocks-restart")
        dir.write("spool/incoming/nine.json", Self.job)
        let once = try runPushspool(["run", "--once"] + common, cwd: dir.url, env: ["PUSHSPOOL_TEST_CLOCK": "2027-03-14T03:10:00Z"])
        #expect(once.status == 0, "\(once.stderr)")
        // Nothing was due at 03:10Z: the job waits in active/ for Kathmandu's wave.
        #expect(FileManager.default.fileExists(atPath: dir.path("spool/active/nine.json")))
        let status = try runPushspool(["status", "--json"] + common, cwd: dir.url)
        #expect(status.stdout.contains(#""next_wave":{"at":"2027-03-14T03:15:00.000Z","devices":4}"#), "\(status.stdout)")
        #expect(status.stdout.contains("waiting for wave"), "\(status.stdout)")
        // A dispatcher at 1 h a second from 03:00Z, stopped once Paris's wave (08:00Z) is sent.
        let first = try BackgroundRun(["run"] + common, cwd: dir.url, env: ["PUSHSPOOL_TEST_CLOCK": "2027-03-14T03:00:00Z*3600"])
        #expect(eventually("Paris's wave", timeout: 60, lastSeen: { first.tail() }) { Self.deliveries(dir).waves.count >= 3 })
        first.terminate()
        first.waitUntilExit()
        #expect(Self.deliveries(dir).waves.count == 3, "stopped after the UTC wave: the test's window was missed")
        #expect(FileManager.default.fileExists(atPath: dir.path("spool/active/nine.json")))
        let between = try runPushspool(["status", "--json"] + common, cwd: dir.url)
        #expect(between.stdout.contains(#""next_wave":{"at":"2027-03-14T09:00:00.000Z","devices":6}"#), "\(between.stdout)")
        // The rest, from a clock back before them (a restart replans the same waves).
        try Self.runUntilDone(dir, common, clock: "2027-03-14T08:30:00Z*10800")
        Self.expectEachAtNine(dir)
    }

    /// The grace rule, both sides: at 09:30Z, UTC's 09:00 wave (30 min late) goes out; Paris's
    /// 08:00 (90 min late) and the Asian waves are skipped, each with its reason.
    @Test func aLateWaveIsSentWithinTheGraceAndSkippedPastIt() throws {
        let (dir, common) = try Self.spool("clocks-grace")
        dir.write("spool/incoming/nine.json", Self.job)
        let r = try runPushspool(["run", "--once"] + common, cwd: dir.url, env: ["PUSHSPOOL_TEST_CLOCK": "2027-03-14T09:30:00Z"])
        #expect(r.status == 0, "\(r.stderr)")
        let waves = Self.deliveries(dir).waves
        let byAt = Dictionary(uniqueKeysWithValues: waves.map { ($0["at"] as? String ?? "", $0) })
        #expect(byAt["2027-03-14T09:00:00.000Z"]?["status"] as? String == "sent")
        #expect(byAt["2027-03-14T08:00:00.000Z"]?["status"] as? String == "skipped")
        #expect((byAt["2027-03-14T08:00:00.000Z"]?["reason"] as? String)?.hasPrefix("90 minutes late") == true)
        #expect(byAt["2027-03-14T03:15:00.000Z"]?["status"] as? String == "skipped")
        let times = Self.deliveries(dir).times
        #expect(Set(times.keys) == ["d3-0", "d3-1", "d3-2", "d3-3", "plain-0", "plain-1"])
        // New York and Los Angeles are still ahead.
        #expect(FileManager.default.fileExists(atPath: dir.path("spool/active/nine.json")))
    }

    /// Quiet hours 22:00–08:00 (the app's): a 07:00 job reaches a UTC device at 08:00; a critical
    /// one at 07:00.
    @Test func quietHoursDeferAndCriticalIgnoresThem() throws {
        let config = #"{"spool": "spool", "local_time_grace_minutes": 600, "apps": {"default": {"quiet_hours": {"start": "22:00", "end": "08:00"}}}}"#
        let (dir, common) = try Self.spool("clocks-quiet", config: config)
        dir.write("spool/incoming/early.json", #"{"id": "early", "broadcast": true, "pns": ["fcm"], "message": "m", "local_time": "07:00", "local_date": "2027-03-14"}"#)
        dir.write("spool/incoming/urgent.json", #"{"id": "urgent", "broadcast": true, "pns": ["apns", "fcm"], "message": "m", "interruption_level": "critical", "local_time": "07:00", "local_date": "2027-03-14"}"#)
        let r = try runPushspool(["run", "--once"] + common, cwd: dir.url, env: ["PUSHSPOOL_TEST_CLOCK": "2027-03-14T09:05:00Z"])
        #expect(r.status == 0, "\(r.stderr)")
        let early = Self.deliveries(dir, job: "early").wave, urgent = Self.deliveries(dir, job: "urgent").wave
        #expect(early["plain-0"] == "2027-03-14T08:00:00.000Z", "\(early)")
        #expect(urgent["plain-0"] == "2027-03-14T07:00:00.000Z", "\(urgent)")
        // Paris: 07:00 local is 06:00Z, inside the quiet hours: 08:00 local, 07:00Z.
        #expect(early["d2-0"] == "2027-03-14T07:00:00.000Z" && urgent["d2-0"] == "2027-03-14T06:00:00.000Z")
    }
}

/// Operators between waves, and quiet hours on a job for now.
@Suite(.serialized) struct LocalTimeControlTests {
    /// A cancel reaches a job between waves at once: it ends `cancelled`, its later waves unsent.
    @Test func cancelBetweenWaves() throws {
        let (dir, common) = try LocalTimeCampaignTests.spool("clocks-cancel")
        // 1 s a second from 03:20Z: Kathmandu's wave is late but within the grace, Kolkata's at 03:30Z is 10 min ahead.
        let run = try BackgroundRun(["run"] + common, cwd: dir.url, env: ["PUSHSPOOL_TEST_CLOCK": "2027-03-14T03:20:00Z"])
        dir.write("spool/incoming/nine.json", LocalTimeCampaignTests.job)
        #expect(eventually("the first wave", timeout: 30, lastSeen: { run.tail() }) { LocalTimeCampaignTests.deliveries(dir).waves.count == 1 })
        let r = try runPushspool(["cancel", "nine"] + common, cwd: dir.url)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(eventually("the job to end", timeout: 30, lastSeen: { run.tail() }) {
            FileManager.default.fileExists(atPath: dir.path("spool/done/nine.json"))
        })
        run.terminate()
        run.waitUntilExit()
        let summary = dir.jsonLines("spool/results/nine.jsonl").last ?? [:]
        #expect(summary["status"] as? String == "cancelled" && summary["delivered"] as? Int == 4, "\(summary)")
    }

    /// A job with no local_time and the job's own quiet hours: devices whose clock is in them
    /// wait for their end; the others are sent at once.
    @Test func aJobForNowWaitsOutQuietHoursPerZone() throws {
        let (dir, common) = try LocalTimeCampaignTests.spool("clocks-now-quiet")
        // 02:00Z: 07:45 in Kathmandu and 07:30 in Kolkata (quiet until 08:00), 03:00 in Paris (quiet), 21:00 in New York (not).
        dir.write("spool/incoming/now.json", #"{"id": "now", "broadcast": true, "pns": ["fcm"], "message": "m", "quiet_hours": {"start": "22:00", "end": "08:00"}}"#)
        let r = try runPushspool(["run", "--once"] + common, cwd: dir.url, env: ["PUSHSPOOL_TEST_CLOCK": "2027-03-14T02:00:00Z"])
        #expect(r.status == 0, "\(r.stderr)")
        let wave = LocalTimeCampaignTests.deliveries(dir, job: "now").wave
        #expect(Set(wave.keys) == ["d4-0", "d4-1", "d4-2", "d4-3", "d5-0", "d5-1", "d5-2", "d5-3"], "\(wave)")
        let status = try runPushspool(["status", "--json"] + common, cwd: dir.url)
        #expect(status.stdout.contains(#""next_wave":{"at":"2027-03-14T02:15:00.000Z","devices":4}"#), "\(status.stdout)")
    }
}
