import Foundation
import Testing
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// A spool with the sandbox provider (nothing to fake), its config, and fcm devices `d0…` tagged
/// `all`, driven through the real binary.
final class SandboxSpool {
    let dir = TempDir("pushspool-spool")
    var spool: String { dir.path("spool") }
    var common: [String] { ["--config", dir.path("pushspool.json")] }

    init(devices: Int, config: String = "") throws {
        dir.write("pushspool.json", #"{"spool": "spool"\#(config)}"#)
        try initSpool(common)
        var lines = ""
        for i in 0..<devices { lines += #"{"id":"d\#(i)","platform":"fcm","handle":"tok-\#(i)","tags":["all"]}"# + "\n" }
        dir.write("devices.jsonl", lines)
        let r = try runPushspool(["import", dir.path("devices.jsonl")] + common)
        guard r.status == 0 else { throw FakeServer.FakeError(message: "import failed: \(r.stderr)") }
    }

    func path(_ folder: String) -> String { dir.path("spool/\(folder)") }
    func results(_ id: String) -> [[String: Any]] { dir.jsonLines("spool/results/\(id).jsonl") }
    /// Devices the sandbox "delivered" job `id` to, one entry per notification.
    func sent(_ id: String) -> [String] {
        dir.jsonLines("spool/outbox/fcm.jsonl").filter { $0["job"] as? String == id }.compactMap { $0["device"] as? String }
    }
}

/// Output a terminal or a log shows: valid UTF-8 without control characters but line ends.
private func isPrintable(_ text: String) -> Bool {
    !text.unicodeScalars.contains { $0 == "\u{FFFD}" || ($0.properties.generalCategory == .control && $0 != "\n") }
}

/// Job files with names that are not UTF-8 or hold control characters, in `incoming/` and in
/// `active/`: quarantined to `failed/` under safe names, unread, with the original bytes
/// escaped in one line of their result logs; nothing is sent, nothing stays behind, and neither
/// `run` nor `status` prints a raw control character.
@Suite(.serialized)
struct UnsafeJobNameTests {
    static let job = #"{"id":"would-send","to_tag":"all","pns":"fcm","message":"hi"}"#

    @Test func unsafeNamesAreQuarantinedUnderSafeNames() throws {
        let s = try SandboxSpool(devices: 2)
        let bad = Array("bad".utf8) + [0xFF] + Array(".json".utf8)
        let names: [(folder: String, bytes: [UInt8], error: String)] = [
            ("incoming", bad, #"the file name "bad\xff.json" is not valid UTF-8; the job was not read"#),
            ("incoming", Array("line\nbreak.json".utf8), #"the file name "line\nbreak.json" contains control characters; the job was not read"#),
            ("incoming", Array("\u{1b}[31mred.json".utf8), #"the file name "\x1b[31mred.json" contains control characters; the job was not read"#),
            ("active", Array("stuck".utf8) + [0xFE, 0x07] + Array(".json".utf8), #"the file name "stuck\xfe\x07.json" is not valid UTF-8; the job was not read"#),
        ]
        for n in names { createFile(rawName: n.bytes, in: s.path(n.folder), contents: Self.job) }

        let run = try runPushspool(["run", "--once"] + s.common)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(rawNames(in: s.path("incoming")).isEmpty && rawNames(in: s.path("active")).isEmpty, "nothing left behind")
        let failed = Set(rawNames(in: s.path("failed")).map { String(decoding: $0, as: UTF8.self) })
        #expect(failed == Set(names.map { SpoolName($0.bytes).safeName }), "\(failed)")
        for name in failed {
            #expect(name.range(of: #"^[A-Za-z0-9._-]+-[0-9a-f]{8}\.json$"#, options: .regularExpression) != nil, "\(name)")
        }
        for n in names {
            let safe = SpoolName(n.bytes).safeName
            let lines = s.results(String(safe.dropLast(5)))
            #expect(lines.first?["file"] as? String == safe)
            #expect(lines.last?["status"] as? String == "failed")
            #expect(lines.last?["error"] as? String == n.error)
            #expect(run.stdout.contains("failed — \(n.error) (moved to failed/\(safe))"), "\(run.stdout)")
        }
        #expect(s.sent("would-send").isEmpty, "a job with an unsafe name is never read, so never sent")
        #expect(isPrintable(run.stdout) && isPrintable(run.stderr), "\(run.stdout)")

        let status = try runPushspool(["status"] + s.common)
        #expect(status.status == 0)
        #expect(isPrintable(status.stdout), "\(status.stdout)")
        #expect(status.stdout.contains(#"failed bad_-"#) && status.stdout.contains(#"\xff"#), "\(status.stdout)")
        let json = try runPushspool(["status", "--json"] + s.common)
        #expect(isPrintable(json.stdout), "\(json.stdout)")

        // The same name again: the same safe name, never replacing the first file.
        createFile(rawName: bad, in: s.path("incoming"), contents: Self.job)
        let again = try runPushspool(["run", "--once"] + s.common)
        #expect(again.status == 0)
        let stem = String(SpoolName(bad).safeName.dropLast(5))
        #expect(Set(rawNames(in: s.path("failed")).map { String(decoding: $0, as: UTF8.self) }).isSuperset(of: ["\(stem).json", "\(stem).1.json"]))
        #expect(s.results("\(stem).1").last?["error"] as? String == names[0].error)
    }
}

/// The older finding "two files with one id under `run --once` leave one in `active/` with a
/// misleading message": one runs, the other waits for it and ends as a duplicate in
/// `done/<name>.duplicate.json`; nothing stays in `active/`.
@Suite(.serialized)
struct SameIDFilesTests {
    @Test func twoFilesWithOneIDUnderRunOnce() throws {
        let s = try SandboxSpool(devices: 4)
        // Paced over 2 s, so the first is still running when the second is claimed.
        let job = #"{"id":"same-id","to_tag":"all","pns":"fcm","message":"hi","spread_over_seconds":2}"#
        s.dir.write("spool/incoming/first.json", job)
        s.dir.write("spool/incoming/second.json", job)
        let run = try runPushspool(["run", "--once"] + s.common)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(s.dir.list("spool/active").isEmpty, "left in active/: \(s.dir.list("spool/active"))")
        let done = s.dir.list("spool/done")
        #expect(done.count == 2 && done.filter { $0.hasSuffix(".duplicate.json") }.count == 1, "\(done)")
        let duplicate = try #require(done.first { $0.hasSuffix(".duplicate.json") })
        #expect(run.stdout.contains("job same-id: done — delivered 4"), "\(run.stdout)")
        #expect(run.stdout.contains("job same-id: duplicate of a completed job, not sent again (moved to done/\(duplicate))"), "\(run.stdout)")
        #expect(!run.stdout.contains("another dispatcher"), "\(run.stdout)")
        #expect(s.sent("same-id").sorted() == ["d0", "d1", "d2", "d3"], "sent once")
        #expect(s.results("same-id").filter { $0["type"] as? String == "summary" }.count == 1)
    }
}

/// Upgrading from a spool that several hosts shared (earlier releases): the host that keeps the
/// spool resumes a job another host claimed in the PostgreSQL registry and was killed in the
/// middle of, and finishes it instead of reporting it a duplicate of that host's claim (its result
/// log already has the job line: a resume, not a copy). Two "hosts" on one machine through
/// `PUSHSPOOL_HOSTNAME`, which the claim names.
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"), .serialized)
struct SharedSpoolUpgradeTests {
    @Test func theHostKeepingTheSpoolFinishesAJobAnotherHostClaimed() throws {
        let env = ["PUSHSPOOL_TEST_REGISTRY": try RegistryFixture.postgresDatabase()]
        let dir = TempDir("shared-spool")
        dir.write("pushspool.json", #"{"spool": "spool", "registry": "env:PUSHSPOOL_TEST_REGISTRY"}"#)
        let common = ["--config", dir.path("pushspool.json")]
        #expect(try runPushspool(["init"] + common, env: env).status == 0)
        var lines = ""
        for i in 0..<20 { lines += #"{"id":"d\#(i)","platform":"fcm","handle":"tok-\#(i)","tags":["all"]}"# + "\n" }
        dir.write("devices.jsonl", lines)
        #expect(try runPushspool(["import", dir.path("devices.jsonl")] + common, env: env).status == 0)
        dir.write("spool/incoming/paced.json", #"{"id":"paced","to_tag":"all","pns":"fcm","message":"m","spread_over_seconds":8}"#)
        func sent() -> [String] {
            dir.jsonLines("spool/outbox/fcm.jsonl").filter { $0["job"] as? String == "paced" }.compactMap { $0["device"] as? String }
        }

        let b = try startPushspool(["run"] + common, env: env.merging(["PUSHSPOOL_HOSTNAME": "host-b"]) { $1 })
        defer { if b.isRunning { kill(b.processIdentifier, SIGKILL); b.waitUntilExit() } }
        eventually("host B to get going (4 sent)", timeout: 30, lastSeen: { "\(sent().count) sent" }) { sent().count >= 4 }
        kill(b.processIdentifier, SIGKILL)
        b.waitUntilExit()
        let a = try startPushspool(["run"] + common, env: env.merging(["PUSHSPOOL_HOSTNAME": "host-a"]) { $1 })
        defer { if a.isRunning { a.terminate(); a.waitUntilExit() } }
        eventually("host A to finish paced.json", timeout: 40, lastSeen: { "done: \(dir.list("spool/done")), active: \(dir.list("spool/active"))" }) {
            FileManager.default.fileExists(atPath: dir.path("spool/done/paced.json"))
        }
        #expect(!dir.list("spool/done").contains { $0.contains("duplicate") }, "\(dir.list("spool/done"))")
        let finals = dir.jsonLines("spool/results/paced.jsonl").filter { $0["type"] as? String == "delivery" }
        #expect(finals.count == 20 && Set(finals.compactMap { $0["device"] as? String }).count == 20)
        #expect(Set(sent()).count == 20 && sent().count <= 21, "every device once (one in flight at the kill may go twice): \(sent().count)")
    }
}
