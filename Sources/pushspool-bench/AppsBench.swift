import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A job file dropped as writers do: written to `tmp/`, renamed into `incoming/` (for jobs
/// `submit` has no flag for, such as `"app"`).
enum BenchJob {
    static func drop(_ json: String, spool: String) throws {
        let tmp = URL(fileURLWithPath: spool).appendingPathComponent("tmp/bench.json")
        try json.write(to: tmp, atomically: false, encoding: .utf8)
        guard rename(tmp.path, spool + "/incoming/bench.json") == 0 else { throw BenchError(description: "cannot drop the job") }
    }

    /// Writes `devices` import lines to `file`, APNs and FCM in turn (`d<i>`, tag `bench`), each
    /// with `extra(i)` appended to its fields (`,"app":"a1"`). A chunk at a time: the bench's own
    /// memory stays small, and with it what the children's peak RSS can inherit before their exec.
    static func writeDevices(_ devices: Int, to file: URL, extra: (Int) -> String) throws {
        FileManager.default.createFile(atPath: file.path, contents: nil)
        let out = try FileHandle(forWritingTo: file)
        var lines = ""
        for i in 0..<devices {
            lines += i % 2 == 0
                ? #"{"id":"d\#(i)","platform":"apns","handle":"\#(String(format: "%064x", i))","tags":["bench"]\#(extra(i))}"# + "\n"
                : #"{"id":"d\#(i)","platform":"fcm","handle":"fcm-token-\#(i)","tags":["bench"]\#(extra(i))}"# + "\n"
            if i % 10_000 == 9_999 || i == devices - 1 {
                try out.write(contentsOf: Data(lines.utf8))
                lines = ""
            }
        }
        try out.close()
    }
}

/// Several apps in one dispatcher (README "Several apps"), each figure beside its single-app peer
/// in the same round:
/// - a broadcast through the sandbox to N devices (APNs and FCM) spread over 4 apps, `"app": "*"`,
///   against the same broadcast to N devices of one app (`run --once`'s whole process);
/// - 100,000 APNs pushes to nginx with every device in one of 3 apps (three topics on one key),
///   against the same pushes in one app;
/// - opening a SQLite registry of N devices written by the last release (schema 4): the migration
///   `registry migrate` does, against SQLite's own shell building the new handle index on a copy
///   (what the storage engine itself takes for the one index the migration builds).
struct AppsRound {
    var oneApp: Measured
    var fourApps: Measured
    var nginxOne: NginxRound.Campaign?
    var nginxThree: NginxRound.Campaign?
    var migrate: Measured
    var shellIndex: Measured?

    /// `round`: odd rounds measure the several-apps side first (the machine's load drifts).
    static func run(devices: Int, nginxCount: Int, concurrency: Int, round: Int = 0) throws -> AppsRound {
        let dir = try BenchPaths.scratch("pushspool-bench-apps")
        defer { try? FileManager.default.removeItem(at: dir) }
        let binary = try BenchPaths.releaseBinary()
        let first = round % 2 == 1
        let earlyFour = first ? try broadcast(binary, dir: dir, name: "four", devices: devices, apps: 4) : nil
        let one = try broadcast(binary, dir: dir, name: "one", devices: devices, apps: 1)
        let four = try earlyFour ?? broadcast(binary, dir: dir, name: "four", devices: devices, apps: 4)
        var nginxOne: NginxRound.Campaign?, nginxThree: NginxRound.Campaign?
        if let nginxBinary = try? Nginx.binary() {
            let setup = try BenchAPNs(dir: dir, devices: nginxCount)
            let fixed = try NginxRound.fixed(nginxBinary, dir: dir)
            defer { fixed.stop() }
            let worker = fixed.workerPID()
            func three() throws -> NginxRound.Campaign {
                try setup.campaign(name: "three-apps", port: fixed.port, count: nginxCount, concurrency: concurrency, serverPID: worker, apps: 3)
            }
            if first { nginxThree = try three() }
            nginxOne = try setup.campaign(name: "one-app", port: fixed.port, count: nginxCount, concurrency: concurrency, serverPID: worker)
            if !first { nginxThree = try three() }
        }
        let (migrate, shellIndex) = try migration(binary, dir: dir, devices: devices)
        return AppsRound(oneApp: one, fourApps: four, nginxOne: nginxOne, nginxThree: nginxThree, migrate: migrate, shellIndex: shellIndex)
    }

    /// `run --once` of a broadcast to N devices (APNs and FCM in turn) over `apps` apps, all of them.
    static func broadcast(_ binary: String, dir: URL, name: String, devices: Int, apps: Int) throws -> Measured {
        let spool = dir.appendingPathComponent("spool-\(name)").path
        let config = dir.appendingPathComponent("\(name).json")
        let section = apps <= 1 ? "" : #", "apps": {"# + (0..<apps).map { #""a\#($0)": {}"# }.joined(separator: ", ") + #"}, "default_app": "a0""#
        try #"{"spool": "spool-\#(name)"\#(section)}"#.write(to: config, atomically: true, encoding: .utf8)
        let common = ["--spool", spool, "--config", config.path]
        let file = dir.appendingPathComponent("devices-\(name).jsonl")
        try BenchJob.writeDevices(devices, to: file) { i in apps <= 1 ? "" : #","app":"a\#(i % apps)""# }
        guard try measure(binary, ["init"] + common).status == 0 else { throw BenchError(description: "init failed") }
        let imported = try measure(binary, ["import"] + common + [file.path])
        guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
        try? FileManager.default.removeItem(at: file)
        let app = apps <= 1 ? "" : #", "app": "*""#
        try BenchJob.drop(#"{"id": "bench", "broadcast": true, "pns": ["apns", "fcm"], "message": "hello", "from": "bench"\#(app)}"#, spool: spool)
        let sent = try measure(binary, ["run", "--once"] + common)
        guard sent.status == 0 else { throw BenchError(description: "\(name) broadcast failed (\(sent.status)): \(sent.stderr.suffix(300))") }
        try? FileManager.default.removeItem(atPath: spool)
        return sent
    }

    /// A registry of the last release (schema 4: devices with their tag lists, the tag index,
    /// unique id and handle indexes), written by SQLite's shell, then `registry migrate`.
    static func migration(_ binary: String, dir: URL, devices: Int) throws -> (Measured, Measured?) {
        guard let shell = which("sqlite3") else { throw BenchError(description: "sqlite3 is not installed (it writes the old registry)") }
        let spool = dir.appendingPathComponent("spool-migrate").path
        guard try measure(binary, ["init", "--spool", spool]).status == 0 else { throw BenchError(description: "init failed") }
        let registry = spool + "/registry.sqlite"
        for suffix in ["", "-wal", "-shm"] { unlink(registry + suffix) }
        let script = dir.appendingPathComponent("v4.sql")
        try """
            PRAGMA page_size = 16384; PRAGMA journal_mode = WAL;
            CREATE TABLE devices(rowid INTEGER PRIMARY KEY, id TEXT NOT NULL, platform TEXT NOT NULL, handle TEXT NOT NULL,
                                 updated_at REAL NOT NULL, lang TEXT, tags TEXT NOT NULL DEFAULT ' ');
            CREATE TABLE device_tags(tag TEXT NOT NULL, device_rowid INTEGER NOT NULL, PRIMARY KEY(tag, device_rowid)) WITHOUT ROWID;
            CREATE TABLE id_reservations(id TEXT PRIMARY KEY, owner TEXT NOT NULL, reserved_at REAL NOT NULL);
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(devices))
            INSERT INTO devices(rowid, id, platform, handle, updated_at, tags)
                SELECT i, 'd' || i, CASE i % 2 WHEN 0 THEN 'apns' ELSE 'fcm' END, printf('%064x', i), 1, ' bench ' FROM n;
            INSERT INTO device_tags(tag, device_rowid) SELECT 'bench', rowid FROM devices;
            CREATE UNIQUE INDEX devices_by_id ON devices(id);
            CREATE UNIQUE INDEX devices_by_handle ON devices(handle);
            CREATE TRIGGER devices_untag AFTER DELETE ON devices BEGIN
                DELETE FROM device_tags WHERE device_rowid = old.rowid; END;
            COMMIT;
            PRAGMA user_version = 4;
            PRAGMA wal_checkpoint(TRUNCATE);
            """.write(to: script, atomically: true, encoding: .utf8)
        let written = try measure("/bin/sh", ["-c", "\"$0\" \"$1\" < \"$2\"", shell, registry, script.path])
        guard written.status == 0 else { throw BenchError(description: "writing the old registry failed: \(written.stderr)") }
        // The peer first, on a copy: SQLite's shell building the index the migration builds.
        let copy = dir.appendingPathComponent("copy.sqlite").path
        try FileManager.default.copyItem(atPath: registry, toPath: copy)
        let peer = try measure(shell, [copy, "CREATE UNIQUE INDEX devices_by_app_handle ON devices(handle, platform);"])
        unlink(copy)
        let migrated = try measure(binary, ["registry", "migrate", "--spool", spool])
        guard migrated.status == 0, migrated.stdout.contains("from version 4 to ") else {
            throw BenchError(description: "registry migrate failed (\(migrated.status)): \(migrated.stdout) \(migrated.stderr)")
        }
        let count = try measure(binary, ["devices", "--count", "--spool", spool])
        guard count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == String(devices) else {
            throw BenchError(description: "after the migration: \(count.stdout) devices, not \(devices)")
        }
        try? FileManager.default.removeItem(atPath: spool)
        return (migrated, peer.status == 0 ? peer : nil)
    }

    /// `pushspool-bench apps`: R rounds, one row per figure (medians), each beside its target.
    static func printRows(devices: Int, nginxCount: Int, concurrency: Int, runs: Int) throws {
        var rounds: [AppsRound] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("apps run \(i + 1)/\(runs)…\n".utf8))
            rounds.append(try run(devices: devices, nginxCount: nginxCount, concurrency: concurrency, round: i))
        }
        func seconds(_ x: Double) -> String { String(format: "%.2f s", x) }
        let one = median(rounds.map(\.oneApp.seconds)), four = median(rounds.map(\.fourApps.seconds))
        let vsOne = median(rounds.map { $0.fourApps.seconds / $0.oneApp.seconds })
        row(["sandbox broadcast, \(devices) devices over 4 apps (`\"app\": \"*\"`): run --once", seconds(four), "one app \(seconds(one))",
             String(format: "%.2f×", vsOne), "≤ 1.1× one app", vsOne <= 1.1 ? "yes" : "no"])
        if rounds.allSatisfy({ $0.nginxOne != nil && $0.nginxThree != nil }) {
            let three = median(rounds.map { $0.nginxThree!.client.rate }), single = median(rounds.map { $0.nginxOne!.client.rate })
            let ratio = median(rounds.map { $0.nginxThree!.client.rate / $0.nginxOne!.client.rate })
            let complete = rounds.allSatisfy { $0.nginxThree!.delivered == nginxCount && $0.nginxThree!.distinct == nginxCount }
            row(["nginx, \(nginxCount) APNs pushes, every device in one of 3 apps: rate", rate(three), "one app \(rate(single))",
                 String(format: "%.3f×", ratio), "≥ 0.95× one app", ratio >= 0.95 && complete ? "yes" : "no"])
            let cpu = median(rounds.map { $0.nginxThree!.client.cpuMicrosPerPush / $0.nginxOne!.client.cpuMicrosPerPush })
            row(["same, CPU per push (whole process)", String(format: "%.1f µs", median(rounds.map { $0.nginxThree!.client.cpuMicrosPerPush })),
                 String(format: "one app %.1f µs", median(rounds.map { $0.nginxOne!.client.cpuMicrosPerPush })),
                 String(format: "%.3f×", cpu), "", ""])
        }
        let migrate = median(rounds.map(\.migrate.seconds))
        let peer = rounds.compactMap(\.shellIndex).map(\.seconds)
        row(["migration of a \(devices)-device SQLite registry (registry migrate, whole process)", seconds(migrate),
             peer.isEmpty ? "" : "sqlite3 index build \(seconds(median(peer)))",
             peer.isEmpty ? "" : String(format: "%.2f×", migrate / median(peer)), "≤ 10 s", migrate <= 10 ? "yes" : "no"])
        let cpu = median(rounds.map { $0.fourApps.cpuSeconds / $0.oneApp.cpuSeconds })
        row(["same broadcast, CPU (whole process)", seconds(median(rounds.map(\.fourApps.cpuSeconds))),
             "one app " + seconds(median(rounds.map(\.oneApp.cpuSeconds))), String(format: "%.2f×", cpu), "", ""])
    }
}
