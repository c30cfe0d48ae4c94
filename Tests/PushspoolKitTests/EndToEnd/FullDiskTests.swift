import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// "Nothing is lost" on a full disk: the result log lives on a 16 KiB tmpfs that fills up mid-job.
/// Needs root and mount(2) (CI has both); where a trial mount fails the suite is skipped.
@Suite(.enabled(if: MountProbe.canMountTmpfs), .serialized)
struct FullDiskTests {
    static func sh(_ args: [String]) -> Int32 { MountProbe.sh(args) }

    @Test func fullDiskLeavesTheJobInActiveAndTheNextRunFinishesIt() throws {
        let dir = TempDir("pushspool-fulldisk")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        #expect(try runPushspool(["run", "--once"] + spool).status == 0)   // creates the spool
        let results = dir.path("spool/results")
        try #require(Self.sh(["mount", "-t", "tmpfs", "-o", "size=16k,mode=0750", "tmpfs", results]) == 0, "mount failed")
        var mounted = true
        defer { if mounted { _ = Self.sh(["umount", results]) } }

        let devices = (0..<400).map { #"{"id":"d\#($0)","platform":"fcm","handle":"tok-\#($0)","tags":["all"]}"# }
        dir.write("devices.jsonl", devices.joined(separator: "\n") + "\n")
        #expect(try runPushspool(["import", dir.path("devices.jsonl")] + spool).status == 0)
        #expect(try runPushspool(["submit", "--to-tag", "all", "--pns", "fcm", "--message", "m", "--id", "big"] + spool).status == 0)

        let full = try runPushspool(["run", "--once"] + spool)
        #expect(full.status == 74, "\(full.stdout)\(full.stderr)")
        #expect(full.stdout.contains("job big: left in active/"))
        #expect(dir.list("spool/active") == ["big.json"])
        #expect(dir.list("spool/done").isEmpty)
        let partial = dir.jsonLines("spool/results/big.jsonl")
        #expect(partial.count < 400)
        let partialCopy = dir.read("spool/results/big.jsonl") ?? ""

        // Space comes back (here: the real disk again, with what the full one held).
        #expect(Self.sh(["umount", results]) == 0)
        mounted = false
        dir.write("spool/results/big.jsonl", partialCopy, mode: 0o640)
        let resume = try runPushspool(["run", "--once"] + spool)
        #expect(resume.status == 0, "\(resume.stderr)")
        #expect(dir.list("spool/done") == ["big.json"])
        let deliveries = dir.jsonLines("spool/results/big.jsonl").filter { $0["type"] as? String == "delivery" }
        #expect(deliveries.count == 400)
        #expect(Set(deliveries.compactMap { $0["device"] as? String }).count == 400)
        #expect(dir.jsonLines("spool/results/big.jsonl").last?["status"] as? String == "done")
    }

    /// A tmpfs of one page mounted on `path`, filled: the next byte written there fails with ENOSPC.
    static func mountFull(_ path: String) throws {
        try #require(sh(["mount", "-t", "tmpfs", "-o", "size=4k,mode=0750", "tmpfs", path]) == 0, "mount failed")
        let fd = open(path + "/filler", O_WRONLY | O_CREAT, 0o600)
        var page = [UInt8](repeating: 0x2E, count: 4096)
        while page.withUnsafeMutableBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        close(fd)
    }


    /// Issue: once the disk was grown, 40 jobs left in active/ needed 10 cron runs (4 job slots,
    /// orphans looked at in the first scan only). One `run --once` takes them all.
    @Test func onceResumesEveryJobLeftInActiveNotOnlyAsManyAsItHasSlots() throws {
        let dir = TempDir("pushspool-fulldisk")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        #expect(try runPushspool(["register", "--platform", "fcm", "--handle", "tok-1", "--tag", "all"] + spool).status == 0)
        let ids = (0..<9).map { "job\($0)" }
        for id in ids {
            #expect(try runPushspool(["submit", "--to-tag", "all", "--pns", "fcm", "--message", "m", "--id", id] + spool).status == 0)
        }
        let results = dir.path("spool/results")
        try Self.mountFull(results)
        var mounted = true
        defer { if mounted { _ = Self.sh(["umount", "-l", results]) } }
        let full = try runPushspool(["run", "--once"] + spool)
        #expect(full.status == 74, "\(full.stdout)\(full.stderr)")
        #expect(dir.list("spool/active") == ids.map { "\($0).json" })

        #expect(Self.sh(["umount", "-l", results]) == 0)
        mounted = false
        let resume = try runPushspool(["run", "--once"] + spool)
        #expect(resume.status == 0, "\(resume.stdout)\(resume.stderr)")
        #expect(dir.list("spool/active").isEmpty)
        #expect(dir.list("spool/done") == ids.map { "\($0).json" })
    }

    /// Issue: five submits failing with ENOSPC left five empty `tmp/.<id>.json.<pid>.tmp` files.
    @Test func aSubmitThatFailsOnAFullDiskLeavesNothingInTmp() throws {
        let dir = TempDir("pushspool-fulldisk")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        let tmp = dir.path("spool/tmp")
        try Self.mountFull(tmp)
        defer { _ = Self.sh(["umount", "-l", tmp]) }
        for id in ["a", "b", "c"] {
            let r = try runPushspool(["submit", "--to-tag", "all", "--pns", "fcm", "--message", "m", "--id", id] + spool)
            #expect(r.status == 74, "\(r.stderr)")
            #expect(r.stderr.contains("No space left on device"), "\(r.stderr)")
        }
        #expect(dir.list("spool/tmp") == ["filler"])
        #expect(dir.list("spool/incoming").isEmpty)
    }

    /// Issue: a long-running `run` that met a full disk and recovered exited 74 on a later
    /// SIGTERM, so systemd marked a healthy stop as failed.
    @Test func aLongRunningRunThatRecoveredFromAFullDiskStopsWithExitZero() throws {
        let dir = TempDir("pushspool-fulldisk")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        #expect(try runPushspool(["register", "--platform", "fcm", "--handle", "tok-1", "--tag", "all"] + spool).status == 0)
        let results = dir.path("spool/results")
        try Self.mountFull(results)
        var mounted = true
        defer { if mounted { _ = Self.sh(["umount", "-l", results]) } }
        let run = try startPushspool(["run"] + spool)
        defer { if run.isRunning { kill(run.processIdentifier, SIGKILL) } }
        #expect(try runPushspool(["submit", "--to-tag", "all", "--pns", "fcm", "--message", "m", "--id", "j"] + spool).status == 0)
        // The dispatcher took the job and could not write its log: it waits in active/.
        eventually("the job left in active/ with its result log", lastSeen: { "active \(dir.list("spool/active")), results \(dir.list("spool/results"))" }) {
            dir.list("spool/active") == ["j.json"] && dir.list("spool/results").contains("j.jsonl")
        }
        #expect(Self.sh(["umount", "-l", results]) == 0)
        mounted = false
        // Space is back: the dispatcher resumes the job by itself (its orphan scan).
        eventually("the job done once space returned", lastSeen: { "done \(dir.list("spool/done")), active \(dir.list("spool/active"))" }) {
            dir.list("spool/done") == ["j.json"]
        }
        kill(run.processIdentifier, SIGTERM)
        run.waitUntilExit()
        #expect(run.terminationReason == .exit)
        #expect(run.terminationStatus == 0)
    }
}

enum MountProbe {
    static func sh(_ args: [String]) -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = args
        p.standardError = FileHandle.nullDevice
        try? p.run()
        p.waitUntilExit()
        return p.terminationStatus
    }

    /// Root, and mount(2) permitted here (a trial tmpfs mount and unmount).
    static let canMountTmpfs: Bool = {
        guard getuid() == 0 else { return false }
        let probe = TempDir("pushspool-mountprobe")
        guard sh(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", probe.url.path]) == 0 else { return false }
        return sh(["umount", probe.url.path]) == 0
    }()
}
