import Foundation
import Synchronization
import Testing
@testable import PushspoolKit

/// Issue 46: `pushspool registry backup FILE` copies a SQLite registry through the online backup
/// API while `run`, `serve` and an import write to it, and the copy, put in place of the registry, is what
/// the next commands open: every device committed when the copy began is in it, and no half of a
/// transaction.
@Suite struct RegistryBackupTests {
    static let base = 20_000, imported = 100_000

    static func devicesFile(_ dir: TempDir, _ name: String, prefix: String, count: Int) -> String {
        var text = ""
        text.reserveCapacity(count * 80)
        for i in 0..<count {
            text += #"{"id":"\#(prefix)\#(i)","platform":"fcm","handle":"tok-\#(prefix)\#(i)","tags":["t"]}"# + "\n"
        }
        dir.write(name, text)
        return dir.path(name)
    }

    /// A job dropped as services drop them: written in tmp/, renamed into incoming/.
    static func drop(_ dir: TempDir, _ id: String) throws {
        let job = #"{"id": "\#(id)", "broadcast": true, "pns": ["fcm"], "message": "hi", "track": true}"#
        dir.write("spool/tmp/\(id).json", job)
        try FileManager.default.moveItem(atPath: dir.path("spool/tmp/\(id).json"), toPath: dir.path("spool/incoming/\(id).json"))
    }

    /// The devices a backup holds, read off the line the command prints.
    static func devices(in output: String) -> Int? {
        guard let range = output.range(of: #": (\d+) devices, "#, options: .regularExpression) else { return nil }
        return Int(output[range].dropFirst(2).prefix { $0.isNumber })
    }

    /// Devices registered through `serve` while the backups are taken: how many it answered
    /// `200` for (each durable in the registry before its answer), and when to stop.
    final class ServeWriter: Sendable {
        let answered = Mutex(0)
        /// Requests sent, answered 200 or not (a 503 may still have landed).
        let sent = Mutex(0)
        let stop = Mutex(false)
        let failures = Mutex<[String]>([])
    }

    /// The devices of a backup whose ids start with `prefix`, read off the copy itself.
    static func count(in file: String, prefix: String) throws -> Int {
        let db = try SQLiteDatabase(path: file, create: false)
        defer { db.close() }
        let q = try db.statement("SELECT count(*) FROM devices WHERE id LIKE '\(prefix)%'")
        _ = try q.step()
        defer { q.reset() }
        return Int(q.int64(0))
    }

    @Test func aBackupTakenWhileAnImportACampaignAndServeWriteHoldsEveryCommittedDevice() throws {
        let dir = TempDir("registry-backup")
        FrontDoorFiles.write(into: dir)
        dir.write("pushspool.json", #"{"spool": "spool", \#(FrontDoorFiles.section(#", "rate_limit_per_minute": 1000000"#))}"#)
        let config = ["--config", dir.path("pushspool.json")]
        try initSpool(config)
        let seeded = try runPushspool(["import", Self.devicesFile(dir, "base.jsonl", prefix: "b", count: Self.base)] + config)
        #expect(seeded.status == 0 && seeded.stdout.contains("imported \(Self.base) devices"), "\(seeded.stdout)\(seeded.stderr)")
        try Self.drop(dir, "campaign")
        let big = Self.devicesFile(dir, "big.jsonl", prefix: "n", count: Self.imported)

        // serve registers devices one after another for as long as the backups are taken.
        let serve = try ServeProcess(config: dir.path("pushspool.json"), cwd: dir.url)
        let writer = ServeWriter()
        let port = serve.port
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { finished.signal() }
            do {
                let client = try RawHTTPClient(port: port)
                var i = 0
                while !writer.stop.withLock({ $0 }) {
                    writer.sent.withLock { $0 += 1 }
                    let a = try client.request("PUT", "/v1/devices/s\(i)", headers: [("Authorization", FrontDoorFiles.bearer)],
                                               body: #"{"platform": "fcm", "handle": "tok-s\#(i)", "tags": ["t"]}"#)
                    // 503: not answered in time while the import held the write lock (the
                    // registration may still land; only a 200 counts as committed).
                    if a.status == 200 {
                        writer.answered.withLock { $0 += 1 }
                    } else if a.status != 503 {
                        writer.failures.withLock { $0.append("\(a.status) \(a.text)") }
                    }
                    i += 1
                }
            } catch {
                writer.failures.withLock { $0.append("\(error)") }
            }
            writer.stop.withLock { $0 = true }
        }
        thread.start()

        // The import is one transaction: it has committed nothing until it reports, then all.
        let importing = try BackgroundRun(["import", big] + config)
        let campaign = try BackgroundRun(["run", "--once"] + config)
        struct Backup { var file: String, devices: Int, committedAtStart: Int, servedAtStart: Int, overlapped: Bool }
        var backups: [Backup] = []
        repeat {
            let imported = !importing.isRunning && importing.terminationStatus == 0 ? Self.imported : 0
            let served = writer.answered.withLock { $0 }
            let overlapped = importing.isRunning
            let file = dir.path("backup-\(backups.count).sqlite")
            let r = try runPushspool(["registry", "backup", file] + config)
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(r.stdout.contains("integrity ok"), "\(r.stdout)")
            let devices = try #require(Self.devices(in: r.stdout), "\(r.stdout)")
            backups.append(Backup(file: file, devices: devices, committedAtStart: Self.base + imported + served, servedAtStart: served,
                                  overlapped: overlapped))
        } while importing.isRunning || campaign.isRunning
        importing.waitUntilExit()
        campaign.waitUntilExit()
        writer.stop.withLock { $0 = true }
        finished.wait()
        #expect(serve.stop() == 0)
        #expect(writer.failures.withLock { $0 }.isEmpty, "\(writer.failures.withLock { $0 })")
        #expect(importing.terminationStatus == 0 && importing.output.contains("imported \(Self.imported) devices"), "\(importing.tail())")
        #expect(campaign.terminationStatus == 0 && campaign.output.contains("job campaign: done"), "\(campaign.tail())")
        // For the log: each backup's devices, * when it began while the import ran.
        print("registry backups: " + backups.map { "\($0.devices)\($0.overlapped ? "*" : "")" }.joined(separator: " ")
              + "; serve registered \(writer.answered.withLock { $0 })")
        #expect(backups.contains { $0.overlapped }, "a backup was taken while the import ran")
        for b in backups {
            #expect(b.devices >= b.committedAtStart, "\(b.file): \(b.devices) devices, \(b.committedAtStart) committed when it began")
            // Never part of a transaction: the import's devices all or none, every device served before it began.
            let imported = try Self.count(in: b.file, prefix: "n")
            #expect(imported == 0 || imported == Self.imported, "\(b.file): \(imported) of the import's devices")
            #expect(try Self.count(in: b.file, prefix: "b") == Self.base)
            #expect(try Self.count(in: b.file, prefix: "s") >= b.servedAtStart)
        }
        let final = try runPushspool(["registry", "backup", dir.path("final.sqlite")] + config)
        #expect(Self.devices(in: final.stdout) != nil, "\(final.stdout)")
        let served = try Self.count(in: dir.path("final.sqlite"), prefix: "s")
        #expect(served >= writer.answered.withLock { $0 } && served <= writer.sent.withLock { $0 }, "\(served) served devices")
        #expect(try Self.count(in: dir.path("final.sqlite"), prefix: "n") == Self.imported)

        // Restore the backup taken deepest into the import: stop, copy it in place, open it.
        let chosen = try #require(backups.last { $0.overlapped })
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: dir.path("spool/registry.sqlite") + suffix) }
        try FileManager.default.removeItem(atPath: dir.path("spool/registry.sqlite"))
        try FileManager.default.copyItem(atPath: chosen.file, toPath: dir.path("spool/registry.sqlite"))
        let check = try SQLiteDatabase(path: dir.path("spool/registry.sqlite"), create: false)
        let integrity = try check.statement("PRAGMA integrity_check")
        #expect(try integrity.step() && integrity.text(0) == "ok")
        integrity.reset()
        check.close()
        let count = try runPushspool(["devices", "--count"] + config)
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(chosen.devices)", "\(count.stdout)\(count.stderr)")
        // A second run sends from the restored registry: every device it holds, and only those.
        try Self.drop(dir, "after-restore")
        let second = try runPushspool(["run", "--once"] + config)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        let summary = try #require(dir.records("spool/results/after-restore.jsonl").compactMap(\.asSummary).first)
        #expect(summary.status == .done && summary.matched == chosen.devices && summary.delivered == chosen.devices, "\(summary)")
    }

    @Test func aBackupReplacesAnOlderOneWholeAndNeverTheRegistry() throws {
        let dir = TempDir("registry-backup")
        let spool = ["--spool", dir.path("spool")]
        try initSpool(spool)
        _ = try runPushspool(["register", "--platform", "fcm", "--handle", "tok-1", "--id", "one"] + spool)
        dir.write("old.sqlite", "an older backup")
        let r = try runPushspool(["registry", "backup", dir.path("old.sqlite")] + spool)
        #expect(r.status == 0 && Self.devices(in: r.stdout) == 1, "\(r.stdout)\(r.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: dir.path("old.sqlite"))[.posixPermissions] as? Int
        #expect(mode == 0o600, "it holds device handles: the registry's mode")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).allSatisfy { !$0.hasSuffix(".tmp") }, "no temporary left")
        let itself = try runPushspool(["registry", "backup", dir.path("spool/registry.sqlite")] + spool)
        #expect(itself.status == 74 && itself.stderr.contains("cannot be the registry itself"), "\(itself.stderr)")
        let missing = try runPushspool(["registry", "backup"] + spool)
        #expect(missing.status == 64 && missing.stderr.contains("give the FILE"), "\(missing.stderr)")
    }

    @Test func aPostgreSQLRegistryIsPgDumpsToBackUp() throws {
        let dir = TempDir("registry-backup")
        dir.write("pushspool.json", #"{"registry": "postgres://pushspool:s3cret@db.example/pushspool", "spool": "spool"}"#)
        let r = try runPushspool(["registry", "backup", "out.dump", "--config", dir.path("pushspool.json")], cwd: dir.url)
        #expect(r.status == 64, "\(r.stderr)")
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("pg_dump") && lines[0].contains("pg_restore"), "\(r.stderr)")
        #expect(!r.stderr.contains("s3cret"), "the password is masked")
    }
}
