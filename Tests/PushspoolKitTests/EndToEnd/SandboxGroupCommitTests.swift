import Foundation
import Testing
@testable import PushspoolKit

/// A sandbox broadcast through the real binary: targets that finish together share one
/// `write(2)` of the outbox and one of the result log, and a kill -9 still loses nothing and
/// resends at most the targets in flight.
@Suite(.serialized) struct SandboxGroupCommitTests {
    static let concurrency = 64

    /// A spool whose registry holds `devices` devices, a third each on APNs, FCM and WNS, and a
    /// broadcast to all of them waiting in `incoming/`.
    static func broadcastSpool(devices: Int, job: String, spreadOverSeconds: Int? = nil) throws -> TempDir {
        let dir = TempDir("pushspool-group")
        dir.write("pushspool.json", #"{"spool": "spool", "concurrency": \#(concurrency)}"#)
        let common = ["--config", dir.path("pushspool.json")]
        try initSpool(common, cwd: dir.url)
        var lines = ""
        for i in 0..<devices {
            switch i % 3 {
            case 0: lines += #"{"id":"d\#(i)","platform":"apns","handle":"\#(String(format: "%064x", i))","tags":["all"]}"# + "\n"
            case 1: lines += #"{"id":"d\#(i)","platform":"fcm","handle":"fcm-\#(i)","tags":["all"]}"# + "\n"
            default: lines += #"{"id":"d\#(i)","platform":"wns","handle":"https://db5.notify.windows.com/?token=\#(i)","tags":["all"]}"# + "\n"
            }
        }
        dir.write("devices.jsonl", lines)
        let imported = try runPushspool(["import"] + common + [dir.path("devices.jsonl")], cwd: dir.url)
        guard imported.status == 0 else { throw FakeServer.FakeError(message: "import failed: \(imported.stderr)") }
        if let spreadOverSeconds {
            // Paced (submit takes no pacing): written whole before any run looks at the spool.
            dir.write("spool/incoming/\(job).json", #"{"id": "\#(job)", "broadcast": true, "pns": ["apns", "fcm", "wns"], "message": "m", "spread_over_seconds": \#(spreadOverSeconds)}"#)
            return dir
        }
        let submitted = try runPushspool(["submit", "--broadcast", "--pns", "apns,fcm,wns", "--message", "m", "--id", job] + common, cwd: dir.url)
        guard submitted.status == 0 else { throw FakeServer.FakeError(message: "submit failed: \(submitted.stderr)") }
        return dir
    }

    /// Device id → lines naming it, over the outbox's three files (for `job`).
    static func outbox(_ dir: TempDir, job: String) -> [String: Int] {
        var seen: [String: Int] = [:]
        for platform in ["apns", "fcm", "wns"] {
            for line in dir.jsonLines("spool/outbox/\(platform).jsonl") where line["job"] as? String == job {
                seen[line["device"] as? String ?? "", default: 0] += 1
            }
        }
        return seen
    }

    static func deliveries(_ dir: TempDir, job: String) -> [String: Int] {
        var seen: [String: Int] = [:]
        for line in dir.jsonLines("spool/results/\(job).jsonl") where line["type"] as? String == "delivery" {
            seen[line["device"] as? String ?? "", default: 0] += 1
        }
        return seen
    }

    /// What the kernel was asked: a 3,000-device broadcast writes its outbox and its result log
    /// in groups (at most `concurrency` targets each), not once per device, and every device is
    /// in both exactly once.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/strace")))
    func outcomesShareWrites() throws {
        let devices = 3000
        let dir = try Self.broadcastSpool(devices: devices, job: "everyone")
        let trace = dir.path("trace.txt")
        let traced = try runPushspoolVia("/usr/bin/strace", ["-f", "-y", "-o", trace, "-e", "trace=write,writev,pwrite64",
                                                            Paths.binary.path, "run", "--once", "--config", dir.path("pushspool.json")])
        #expect(traced.status == 0, "\(traced.stderr)")
        let calls = (dir.read("trace.txt") ?? "").split(separator: "\n")
        let outboxWrites = calls.filter { $0.contains("/spool/outbox/") }.count
        let resultWrites = calls.filter { $0.contains("/spool/results/everyone.jsonl>") }.count
        // Each target waits for a slot's worth of neighbours at most: ≥ devices / concurrency
        // groups, a write per platform file each, never one per device.
        #expect(outboxWrites >= 3 && outboxWrites <= devices / 10, "\(outboxWrites) outbox writes for \(devices) devices")
        #expect(resultWrites >= 3 && resultWrites <= devices / 20, "\(resultWrites) result-log writes for \(devices) devices")
        let sent = Self.outbox(dir, job: "everyone"), logged = Self.deliveries(dir, job: "everyone")
        #expect(sent.count == devices && sent.values.allSatisfy { $0 == 1 })
        #expect(logged.count == devices && logged.values.allSatisfy { $0 == 1 })
        #expect(dir.list("spool/done") == ["everyone.json"])
    }

    /// kill -9 while the broadcast writes: every device the result log records is in the outbox
    /// (its line went first); the resume sends the rest, each device ends with exactly one
    /// delivery line, and at most `concurrency` devices reach the outbox twice.
    @Test func killDashNineLosesNothing() throws {
        let devices = 60_000
        for (k, fraction) in [0.2, 0.6].enumerated() {
            let job = "b\(k)"
            let dir = try Self.broadcastSpool(devices: devices, job: job)
            let p = try startPushspool(["run", "--once", "--config", dir.path("pushspool.json")], cwd: dir.url)
            // Killed once the result log holds about `fraction` of the deliveries (~150 bytes each).
            let log = dir.path("spool/results/\(job).jsonl")
            eventually("the result log to hold \(Int(fraction * 100))% of the deliveries", timeout: 120, poll: 0.0005) {
                let size = (try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? 0
                return !p.isRunning || size > Int(Double(devices) * fraction * 150)
            }
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            let loggedAtKill = Self.deliveries(dir, job: job), sentAtKill = Self.outbox(dir, job: job)
            #expect(loggedAtKill.count > 0 && loggedAtKill.count < devices, "killed at \(loggedAtKill.count) of \(devices)")
            #expect(loggedAtKill.keys.allSatisfy { sentAtKill[$0] != nil }, "a delivery logged before its outbox line was written")
            let resumed = try runPushspool(["run", "--once", "--config", dir.path("pushspool.json")], cwd: dir.url)
            #expect(resumed.status == 0, "\(resumed.stderr)")
            let logged = Self.deliveries(dir, job: job), sent = Self.outbox(dir, job: job)
            #expect(logged.count == devices && logged.values.allSatisfy { $0 == 1 }, "one delivery line per device")
            #expect(sent.count == devices)
            let twice = sent.values.filter { $0 > 1 }.count
            #expect(twice <= Self.concurrency, "kill at \(Int(fraction * 100))%: \(twice) sent twice, more than the \(Self.concurrency) in flight")
            #expect(dir.list("spool/done") == ["\(job).json"])
        }
    }

    /// Starts `run --once`, and kills it (SIGKILL) once the result log has grown past `bytes` and
    /// a progress checkpoint with a resume point was written after that.
    static func killOnceAt(_ bytes: Int, _ dir: TempDir, job: String) throws {
        let p = try startPushspool(["run", "--once", "--config", dir.path("pushspool.json")], cwd: dir.url)
        let log = dir.path("spool/results/\(job).jsonl"), checkpoint = dir.path("spool/results/.\(job).progress")
        var grownAt: Date?
        eventually("a checkpoint with a resume point after the log passed \(bytes) bytes", timeout: 120, poll: 0.001) {
            if !p.isRunning { return true }
            let size = (try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? 0
            if grownAt == nil && size > bytes { grownAt = Date() }
            guard let grownAt, let modified = try? FileManager.default.attributesOfItem(atPath: checkpoint)[.modificationDate] as? Date else { return false }
            return modified > grownAt && dir.read("spool/results/.\(job).progress")?.contains(#""resume""#) == true
        }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
    }

    /// A resume reads the log's tail, not every line it already holds: killed at about 40%, its
    /// resume killed again at about 75%, the last resume reads a fraction of the log (traced), and
    /// every device ends with exactly one delivery line, at most `concurrency` sent twice per kill.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/strace")))
    func aResumeReadsOnlyTheLogsTail() throws {
        let devices = 60_000, job = "tail"
        // Paced over 20 s, so both kills land mid-campaign however fast the machine sends
        // (unpaced, a whole second between checkpoints can be the whole campaign).
        let dir = try Self.broadcastSpool(devices: devices, job: job, spreadOverSeconds: 20)
        let line = 150   // bytes, about, per delivery line
        try Self.killOnceAt(devices * line * 4 / 10, dir, job: job)
        try Self.killOnceAt(devices * line * 3 / 4, dir, job: job)
        let logged = Self.deliveries(dir, job: job)
        #expect(logged.count > devices / 2 && logged.count < devices, "killed at \(logged.count) of \(devices)")
        let logSize = (try FileManager.default.attributesOfItem(atPath: dir.path("spool/results/\(job).jsonl"))[.size] as? Int) ?? 0
        let trace = dir.path("trace.txt")
        let resumed = try runPushspoolVia("/usr/bin/strace", ["-f", "-y", "-o", trace, "-e", "trace=read,pread64",
                                                             Paths.binary.path, "run", "--once", "--config", dir.path("pushspool.json")])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        // What the resumed run read from its result log: the job line, the tails, the lines after the point.
        var read = 0
        for call in (dir.read("trace.txt") ?? "").split(separator: "\n") where call.contains("/spool/results/\(job).jsonl>") {
            if let r = call.range(of: #"= [0-9]+$"#, options: .regularExpression) { read += Int(call[r].dropFirst(2)) ?? 0 }
        }
        #expect(read > 0 && read < logSize / 4, "the resume read \(read) of the log's \(logSize) bytes")
        let final = Self.deliveries(dir, job: job), sent = Self.outbox(dir, job: job)
        #expect(final.count == devices && final.values.allSatisfy { $0 == 1 }, "one delivery line per device")
        #expect(sent.count == devices && sent.values.filter { $0 > 1 }.count <= 2 * Self.concurrency)
        let summary = dir.jsonLines("spool/results/\(job).jsonl").last
        #expect(summary?["delivered"] as? Int == devices && summary?["matched"] as? Int == devices, "\(summary ?? [:])")
        #expect(dir.list("spool/done") == ["\(job).json"])
    }
}
