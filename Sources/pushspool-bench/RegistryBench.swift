import Foundation

/// One round of the registry figures on N devices (apns/fcm/wns, a user tag each, one of ten
/// interest tags, a language), through the release binary: `import`, a broadcast through the
/// sandbox (`submit --broadcast` + `run --once`: registry scan, rendering, outbox and result log),
/// and a tag expression resolved over every device (`devices --count --tags`).
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
        FileManager.default.createFile(atPath: file.path, contents: nil)
        let out = try FileHandle(forWritingTo: file)
        let shell = which("sqlite3")
        let devicesCSV = dir.appendingPathComponent("devices.csv"), tagsCSV = dir.appendingPathComponent("tags.csv")
        FileManager.default.createFile(atPath: devicesCSV.path, contents: nil)
        FileManager.default.createFile(atPath: tagsCSV.path, contents: nil)
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
        guard submitted.status == 0 else { throw BenchError(description: "submit failed: \(submitted.stderr)") }
        let sent = try measure(binary, ["run", "--once"] + common)
        guard sent.status == 0 else { throw BenchError(description: "run failed (\(sent.status)): \(sent.stderr)") }
        let counted = try measure(binary, ["devices", "--count", "--tags", expression] + common)
        guard counted.status == 0 else { throw BenchError(description: "devices --count failed: \(counted.stderr)") }
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
                             broadcast: Step(seconds: sent.seconds, peakRSS: sent.peakRSS, rows: devices),
                             resolve: Step(seconds: counted.seconds, peakRSS: counted.peakRSS, rows: devices),
                             sqliteShell: peer)
    }
}
