import Foundation

/// One round of the registry figures on N devices (`BenchDevices`: apns/fcm/wns, a user tag each,
/// one of ten interest tags, a language on all of them, or on one in ten from ten million devices
/// on), through the release binary: `import`, a broadcast through the sandbox (`submit
/// --broadcast` + `run --once`: registry scan, rendering, outbox and result log), a tag
/// expression resolved over every device (`devices --count --tags`), a campaign to that
/// expression (`submit --tags` + `run --once`: resolution, rendering, sandbox for the ~20%
/// matched), every device listed to a file (`devices > file`, beside SQLite's shell writing the
/// same rows as JSON from the same registry file), and a second broadcast killed (SIGKILL) at 60%
/// and resumed (`ResumeStep`).
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
    var resume: ResumeStep

    /// Languages on every device up to a million (the harder case for rendering), on one in ten
    /// from ten million on (the spread the ten-million figures are asked for).
    static func langEvery(_ devices: Int) -> Int { devices >= 10_000_000 ? 10 : 1 }

    static let expression = "(interest:3 || interest:7) && !lang:fr"

    static func run(devices: Int) throws -> RegistryRound {
        let dir = try BenchPaths.scratch("pushspool-bench-registry")
        defer { try? FileManager.default.removeItem(at: dir) }
        let binary = try BenchPaths.releaseBinary()
        let shell = which("sqlite3")
        let generated = BenchDevices(count: devices, langEvery: langEvery(devices))
        let file = dir.appendingPathComponent("devices.jsonl")
        try generated.write(.jsonl, to: file)
        let devicesCSV = dir.appendingPathComponent("devices.csv"), tagsCSV = dir.appendingPathComponent("tags.csv")
        if shell != nil {
            try generated.write(.sqliteDevices, to: devicesCSV)
            try generated.write(.sqliteTags, to: tagsCSV)
        }
        let common = ["--spool", dir.appendingPathComponent("spool").path]

        guard try measure(binary, ["init"] + common).status == 0 else { throw BenchError(description: "init failed") }
        let imported = try measure(binary, ["import"] + common + [file.path])
        guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
        let submitted = try measure(binary, ["submit"] + common + ["--broadcast", "--pns", "apns,fcm,wns", "--message", "hello", "--from", "bench", "--id", "everyone"])
        // The broadcast's figure is end to end: submit, then run.
        guard submitted.status == 0 else { throw BenchError(description: "submit failed: \(submitted.stderr)") }
        let sent = try measure(binary, ["run", "--once"] + common)
        guard sent.status == 0 else { throw BenchError(description: "run failed (\(sent.status)): \(sent.stderr)") }
        // The disk a ten-million run needs: the outbox goes once read (the resume's own starts empty).
        let spool = dir.appendingPathComponent("spool")
        let lineBytes = Double(ResumeStep.size(spool.appendingPathComponent("results/everyone.jsonl"))) / Double(devices)
        try? FileManager.default.removeItem(at: spool.appendingPathComponent("outbox"))
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
            let registry = spool.appendingPathComponent("registry.sqlite").path
            let query = "SELECT json_object('id', id, 'platform', platform, 'tags', json_array(tags), 'lang', lang) FROM devices;"
            let listedByShell = try measure(shell, ["-readonly", registry, query], stdoutFile: listFile)
            if listedByShell.status == 0 { peerListing = Step(seconds: listedByShell.seconds, peakRSS: listedByShell.peakRSS, rows: devices) }
        }
        try? FileManager.default.removeItem(atPath: listFile)
        try? FileManager.default.removeItem(at: spool.appendingPathComponent("outbox"))
        let resume = try ResumeStep.run(binary: binary, common: common, spool: spool, devices: devices, lineBytes: lineBytes)
        try? FileManager.default.removeItem(at: file)
        try? FileManager.default.removeItem(at: spool)
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
                             sqliteListing: peerListing, sqliteShell: peer, resume: resume)
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
        // The targets: a million devices, or ten million (memory bound 96 MB there).
        let large = devices >= 10_000_000
        let rssBound = large ? 96 << 20 : 64 << 20
        let rssText = large ? "≤ 96 MB" : "≤ 64 MB"
        func step(_ name: String, _ steps: [Step], peer: [Step] = [], target: String, met: ((Double, Double) -> Bool)?) {
            let seconds = median(steps.map { $0.seconds })
            let r = median(steps.map { $0.rate })
            let rss = steps.map { $0.peakRSS }.max() ?? 0
            var peerCell = "", ratio = ""
            if !peer.isEmpty {
                peerCell = String(format: "sqlite3 shell %.2f s", median(peer.map { $0.seconds }))
                ratio = String(format: "%.2f× the shell's time", median(zip(steps, peer).map { $0.seconds / $1.seconds }))
            }
            let verdict = met.map { $0(seconds, r) && rss <= rssBound ? "yes" : "no" } ?? (rss <= rssBound ? "(RSS yes)" : "(RSS no)")
            row([name + " (peak RSS \(mb(Double(rss))))", String(format: "%.2f s, %@", seconds, rate(r) as NSString),
                 peerCell, ratio, target, verdict])
        }
        let importBound = large ? 45.0 : 5, broadcastBound = large ? 60.0 : 6
        step("import \(devices) devices", rounds.map { $0.importing }, peer: rounds.compactMap { $0.sqliteShell },
             target: String(format: "≤ %.0f s, %@", importBound, rssText)) { s, _ in s <= importBound }
        step("broadcast to \(devices) devices (submit + run --once, sandbox)", rounds.map { $0.broadcast },
             target: String(format: "≤ %.0f s, %@", broadcastBound, rssText)) { s, _ in s <= broadcastBound }
        if large {
            step("tag expression counted over \(devices) devices (devices --count)", rounds.map { $0.resolve },
                 target: "≤ 3 s, \(rssText)") { s, _ in s <= 3 }
        } else {
            step("tag expression resolved over \(devices) devices (devices --count)", rounds.map { $0.resolve },
                 target: "≥ 1M rows/s, \(rssText)") { _, r in r >= 1e6 }
        }
        step("every device listed to a file (devices > file)", rounds.map { $0.listing }, peer: rounds.compactMap { $0.sqliteListing },
             target: large ? "\(rssText)" : "≤ 2 s, \(rssText)", met: large ? nil : { s, _ in s <= 2 })
        step("campaign to that expression (submit + run --once, ~20% sent)", rounds.map { $0.campaign },
             target: rssText, met: nil)
        let resumes = rounds.map { $0.resume }
        let first = median(resumes.map { $0.firstSend }), rest = median(resumes.map { $0.resumed.seconds })
        let resumeRSS = resumes.map { $0.resumed.peakRSS }.max() ?? 0
        let whole = resumes.allSatisfy { $0.delivered == devices }
        row(["resume after kill -9 at \(Int(ResumeStep.fraction * 100))% of a broadcast: first new outbox line (peak RSS \(mb(Double(resumeRSS))))",
             String(format: "%.2f s (the whole resumed run %.2f s; %d sent twice)", first, rest, resumes.map { $0.sentTwice }.max() ?? -1),
             "", "", "≤ 5 s, \(rssText), every device delivered",
             first <= 5 && resumeRSS <= rssBound && whole ? "yes" : "no"])
    }
}
