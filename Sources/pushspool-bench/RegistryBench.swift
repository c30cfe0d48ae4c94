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
        }
        out.write(Data(chunk.utf8))
        try out.close()
        let common = ["--spool", dir.appendingPathComponent("spool").path]

        let imported = try measure(binary, ["import"] + common + [file.path])
        guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
        let submitted = try measure(binary, ["submit"] + common + ["--broadcast", "--pns", "apns,fcm,wns", "--message", "hello", "--from", "bench", "--id", "everyone"])
        guard submitted.status == 0 else { throw BenchError(description: "submit failed: \(submitted.stderr)") }
        let sent = try measure(binary, ["run", "--once"] + common)
        guard sent.status == 0 else { throw BenchError(description: "run failed (\(sent.status)): \(sent.stderr)") }
        let counted = try measure(binary, ["devices", "--count", "--tags", expression] + common)
        guard counted.status == 0 else { throw BenchError(description: "devices --count failed: \(counted.stderr)") }
        return RegistryRound(importing: Step(seconds: imported.seconds, peakRSS: imported.peakRSS, rows: devices),
                             broadcast: Step(seconds: sent.seconds, peakRSS: sent.peakRSS, rows: devices),
                             resolve: Step(seconds: counted.seconds, peakRSS: counted.peakRSS, rows: devices))
    }
}
