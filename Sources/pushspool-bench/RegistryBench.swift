import Foundation

/// One round of the registry figures on N devices (apns/fcm/wns, a user tag each, one of ten
/// interest tags, a language), through the release binary: `import`, a broadcast through the
/// sandbox (`submit --broadcast` + `run --once`: registry scan, rendering, outbox and result log),
/// a tag expression resolved over every device (`devices --count --tags`), and a campaign to that
/// expression (`submit --tags` + `run --once`: resolution, rendering, sandbox for the ~20% matched),
/// and every device listed to a file (`devices > file`), beside SQLite's shell writing the same
/// rows as JSON from the same registry file.
struct RegistryRound {
    struct Step {
        var seconds: Double
        var peakRSS: Int
        var rows: Int
        var rate: Double { Double(rows) / seconds }
    }
    var importing: Step
    var broadcast: Step
    var resolve: Step
    var campaign: Step
    var listing: Step
    var sqliteListing: Step?
    /// SQLite's own shell loading the same rows (CSV) into the same tables and building the same
    /// indexes: what the storage engine itself takes for this load on this machine.
    var sqliteShell: Step?

    static let expression = "(interest:3 || interest:7) && !lang:fr"

    static func run(devices: Int) throws -> RegistryRound {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pushspool-bench-registry-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: dir) }
        let binary = BenchPaths.binary.path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw BenchError(description: "no pushspool at \(binary): run `swift build -c release` first")
        }
        let file = dir.appendingPathComponent("devices.jsonl")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        let out = try FileHandle(forWritingTo: file)
        let shell = which("sqlite3")
        let devicesCSV = dir.appendingPathComponent("devices.csv"), tagsCSV = dir.appendingPathComponent("tags.csv")
        _ = FileManager.default.createFile(atPath: devicesCSV.path, contents: nil)
        _ = FileManager.default.createFile(atPath: tagsCSV.path, contents: nil)
        let csv = try FileHandle(forWritingTo: devicesCSV), tagCSV = try FileHandle(forWritingTo: tagsCSV)
        var csvChunk = "", tagChunk = ""
        var chunk = ""
        let langs = ["en", "fr", "de", "pt-BR"]
        for i in 0..<devices {
            let line: String
            switch i % 3 {
            case 0: line = #"{"id":"a\#(i)","platform":"apns","handle":"\#(String(format: "%064x", i))","tags":["username:u\#(i)","interest:\#(i % 10)"],"lang":"\#(langs[i % 4])"}"#
            case 1: line = #"{"id":"f\#(i)","platform":"fcm","handle":"fcm-token-\#(i)","tags":["username:u\#(i)","interest:\#(i % 10)"],"lang":"\#(langs[i % 4])"}"#
            default: line = #"{"id":"w\#(i)","platform":"wns","handle":"https://db5.notify.windows.com/?token=w\#(i)","tags":["username:u\#(i)","interest:\#(i % 10)"],"lang":"\#(langs[i % 4])"}"#
            }
            chunk += line + "\n"
            if chunk.utf8.count > 1 << 20 { out.write(Data(chunk.utf8)); chunk = "" }
            if shell != nil {
                let id = ["a", "f", "w"][i % 3] + String(i)
                let handle = [String(format: "%064x", i), "fcm-token-\(i)", "https://db5.notify.windows.com/?token=w\(i)"][i % 3]
                let tags = "interest:\(i % 10) username:u\(i)"
                csvChunk += "\(i + 1),\(id),\(["apns", "fcm", "wns"][i % 3]),\(handle),1700000000.0,\(langs[i % 4]), \(tags) \n"
                tagChunk += "username:u\(i),\(i + 1)\ninterest:\(i % 10),\(i + 1)\n"
                if csvChunk.utf8.count > 1 << 20 {
                    csv.write(Data(csvChunk.utf8)); tagCSV.write(Data(tagChunk.utf8))
                    csvChunk = ""; tagChunk = ""
                }
            }
        }
        out.write(Data(chunk.utf8))
        try out.close()
        csv.write(Data(csvChunk.utf8)); tagCSV.write(Data(tagChunk.utf8))
        try csv.close(); try tagCSV.close()
        let common = ["--spool", dir.appendingPathComponent("spool").path]

        guard try measure(binary, ["init"] + common).status == 0 else { throw BenchError(description: "init failed") }
        let imported = try measure(binary, ["import"] + common + [file.path])
        guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
        let submitted = try measure(binary, ["submit"] + common + ["--broadcast", "--pns", "apns,fcm,wns", "--message", "hello", "--from", "bench", "--id", "everyone"])
        // The broadcast's figure is end to end: submit, then run.
        guard submitted.status == 0 else { throw BenchError(description: "submit failed: \(submitted.stderr)") }
        let sent = try measure(binary, ["run", "--once"] + common)
        guard sent.status == 0 else { throw BenchError(description: "run failed (\(sent.status)): \(sent.stderr)") }
        let counted = try measure(binary, ["devices", "--count", "--tags", expression] + common)
        guard counted.status == 0 else { throw BenchError(description: "devices --count failed: \(counted.stderr)") }
        let campaignSubmitted = try measure(binary, ["submit"] + common + ["--tags", expression, "--pns", "apns,fcm,wns", "--message", "hello", "--from", "bench", "--id", "campaign"])
        guard campaignSubmitted.status == 0 else { throw BenchError(description: "submit --tags failed: \(campaignSubmitted.stderr)") }
        let campaignSent = try measure(binary, ["run", "--once"] + common)
        guard campaignSent.status == 0 else { throw BenchError(description: "campaign run failed (\(campaignSent.status)): \(campaignSent.stderr)") }
        let listFile = dir.appendingPathComponent("devices.out").path
        let listed = try measure(binary, ["devices"] + common, stdoutFile: listFile)
        guard listed.status == 0 else { throw BenchError(description: "devices failed (\(listed.status)): \(listed.stderr)") }
        var peerListing: Step?
        if let shell {
            let registry = dir.appendingPathComponent("spool/registry.sqlite").path
            let query = "SELECT json_object('id', id, 'platform', platform, 'tags', json_array(tags), 'lang', lang) FROM devices;"
            let listedByShell = try measure(shell, ["-readonly", registry, query], stdoutFile: listFile)
            if listedByShell.status == 0 { peerListing = Step(seconds: listedByShell.seconds, peakRSS: listedByShell.peakRSS, rows: devices) }
        }
        var peer: Step?
        if let shell {
            let script = dir.appendingPathComponent("load.sql")
            try """
            PRAGMA page_size = 16384; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -8192;
            CREATE TABLE devices(rowid INTEGER PRIMARY KEY, id TEXT NOT NULL, platform TEXT NOT NULL, handle TEXT NOT NULL,
                                 updated_at REAL NOT NULL, lang TEXT, tags TEXT NOT NULL);
            CREATE TABLE import_tags(tag TEXT NOT NULL, device_rowid INTEGER NOT NULL);
            CREATE TABLE device_tags(tag TEXT NOT NULL, device_rowid INTEGER NOT NULL, PRIMARY KEY(tag, device_rowid)) WITHOUT ROWID;
            BEGIN;
            .mode csv
            .import \(devicesCSV.path) devices
            .import \(tagsCSV.path) import_tags
            CREATE UNIQUE INDEX devices_by_id ON devices(id);
            CREATE UNIQUE INDEX devices_by_handle ON devices(handle);
            INSERT INTO device_tags SELECT tag, device_rowid FROM import_tags ORDER BY 1, 2;
            DROP TABLE import_tags;
            COMMIT;
            """.write(to: script, atomically: true, encoding: .utf8)
            let loaded = try measure("/bin/sh", ["-c", "\"$0\" \"$1\" < \"$2\"", shell, dir.appendingPathComponent("peer.sqlite").path, script.path])
            if loaded.status == 0 { peer = Step(seconds: loaded.seconds, peakRSS: loaded.peakRSS, rows: devices) }
        }
        return RegistryRound(importing: Step(seconds: imported.seconds, peakRSS: imported.peakRSS, rows: devices),
                             broadcast: Step(seconds: submitted.seconds + sent.seconds, peakRSS: max(submitted.peakRSS, sent.peakRSS), rows: devices),
                             resolve: Step(seconds: counted.seconds, peakRSS: counted.peakRSS, rows: devices),
                             campaign: Step(seconds: campaignSubmitted.seconds + campaignSent.seconds,
                                            peakRSS: max(campaignSubmitted.peakRSS, campaignSent.peakRSS), rows: devices),
                             listing: Step(seconds: listed.seconds, peakRSS: listed.peakRSS, rows: devices),
                             sqliteListing: peerListing, sqliteShell: peer)
    }
}

extension RegistryRound {
    /// `pushspool-bench registry`: R rounds, then one table row per step (median time and rate,
    /// the largest peak RSS), each beside its target.
    static func printRows(devices: Int, runs: Int) throws {
        var rounds: [RegistryRound] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("registry run \(i + 1)/\(runs) (\(devices) devices)…\n".utf8))
            rounds.append(try RegistryRound.run(devices: devices))
        }
        func step(_ name: String, _ steps: [Step], peer: [Step] = [], target: String, met: ((Double, Double) -> Bool)?) {
            let seconds = median(steps.map { $0.seconds })
            let r = median(steps.map { $0.rate })
            let rss = steps.map { $0.peakRSS }.max() ?? 0
            var peerCell = "", ratio = ""
            if !peer.isEmpty {
                peerCell = String(format: "sqlite3 shell %.2f s", median(peer.map { $0.seconds }))
                ratio = String(format: "%.2f× the shell's time", median(zip(steps, peer).map { $0.seconds / $1.seconds }))
            }
            let verdict = met.map { $0(seconds, r) && rss <= 64 << 20 ? "yes" : "no" } ?? (rss <= 64 << 20 ? "(RSS yes)" : "(RSS no)")
            row([name + " (peak RSS \(mb(Double(rss))))", String(format: "%.2f s, %@", seconds, rate(r) as NSString),
                 peerCell, ratio, target, verdict])
        }
        step("import \(devices) devices", rounds.map { $0.importing }, peer: rounds.compactMap { $0.sqliteShell },
             target: "≤ 5 s, ≤ 64 MB") { s, _ in s <= 5 }
        step("broadcast to \(devices) devices (submit + run --once, sandbox)", rounds.map { $0.broadcast },
             target: "≤ 8 s, ≤ 64 MB") { s, _ in s <= 8 }
        step("tag expression resolved over \(devices) devices (devices --count)", rounds.map { $0.resolve },
             target: "≥ 1M rows/s, ≤ 64 MB") { _, r in r >= 1e6 }
        step("every device listed to a file (devices > file)", rounds.map { $0.listing }, peer: rounds.compactMap { $0.sqliteListing },
             target: "≤ 2 s, ≤ 64 MB") { s, _ in s <= 2 }
        step("campaign to that expression (submit + run --once, ~20% sent)", rounds.map { $0.campaign },
             target: "≤ 64 MB", met: nil)
    }
}
