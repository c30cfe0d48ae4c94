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
