import Foundation

/// `hms`: one campaign to --devices (default 100,000) Huawei devices against the fake Push Kit
/// (Tests/Fakes/hms.js, answering at once), beside the same campaign to as many FCM devices
/// against the fake FCM (`--bench`: no per-token detail), at the same --concurrency (default
/// 1000): pushes a second each, and the ratio. HMS carries up to 1,000 tokens a request, FCM one.
struct HMSRound {
    struct Side {
        var rate: Double
        var requests: Int
        var delivered: Int
    }
    var hms: Side
    var fcm: Side

    static func run(devices: Int, concurrency: Int) throws -> HMSRound {
        let dir = try BenchPaths.scratch("pushspool-bench-hms")
        defer { try? FileManager.default.removeItem(at: dir) }
        let hms = try side(dir: dir, platform: "hms", devices: devices, concurrency: concurrency)
        let fcm = try side(dir: dir, platform: "fcm", devices: devices, concurrency: concurrency)
        return HMSRound(hms: hms, fcm: fcm)
    }

    private static func side(dir root: URL, platform: String, devices: Int, concurrency: Int) throws -> Side {
        let dir = root.appendingPathComponent(platform)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let binary = try BenchPaths.releaseBinary()
        let ca = BenchPaths.fixtures.appendingPathComponent("ca.pem").path
        let fake = try BenchFake(dir: dir, name: platform, script: "\(platform).js", arguments: platform == "fcm" ? ["--bench"] : [])
        defer { fake.stop() }
        let url = "https://127.0.0.1:\(fake.port)"
        let provider: String
        if platform == "hms" {
            provider = #""hms": {"app_id": "104000001", "client_id": "104000001", "client_secret": "hms-secret", "endpoint": "\#(url)", "token_endpoint": "\#(url)/oauth2/v3/token"}"#
        } else {
            let account = try String(contentsOf: BenchPaths.fixtures.appendingPathComponent("service-account.json"), encoding: .utf8)
            try account.replacingOccurrences(of: "PORT", with: String(fake.port))
                .write(to: dir.appendingPathComponent("service-account.json"), atomically: true, encoding: .utf8)
            provider = #""fcm": {"service_account_file": "service-account.json", "endpoint": "\#(url)"}"#
        }
        let config = dir.appendingPathComponent("pushspool.json")
        try #"{"spool": "spool", "concurrency": \#(concurrency), "providers": {\#(provider)}, "tls": {"ca_file": "\#(ca)"}}"#
            .write(to: config, atomically: true, encoding: .utf8)
        let common = ["--spool", dir.appendingPathComponent("spool").path, "--config", config.path]
        guard try measure(binary, ["init"] + common).status == 0 else { throw BenchError(description: "init failed") }
        var lines = ""
        lines.reserveCapacity(devices * 80)
        for i in 0..<devices { lines += #"{"id":"d\#(i)","platform":"\#(platform)","handle":"tok-\#(i)","tags":["campaign"]}"# + "\n" }
        let file = dir.appendingPathComponent("devices.jsonl")
        try lines.write(to: file, atomically: true, encoding: .utf8)
        let imported = try measure(binary, ["import"] + common + [file.path])
        guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
        let submitted = try measure(binary, ["submit"] + common + ["--to-tag", "campaign", "--pns", platform, "--message", "hello", "--id", "bench"])
        guard submitted.status == 0 else { throw BenchError(description: "submit failed: \(submitted.stderr)") }
        let run = try measure(binary, ["run", "--once"] + common)
        guard run.status == 0 else { throw BenchError(description: "\(platform) run failed (\(run.status)): \(run.stderr)") }
        usleep(300_000)   // the fakes write their state every 100 ms
        let state = (try? JSONSerialization.jsonObject(with: Data(contentsOf: fake.stateFile))) as? [String: Any] ?? [:]
        return Side(rate: Double(devices) / run.seconds, requests: state["sends"] as? Int ?? -1, delivered: state["delivered"] as? Int ?? -1)
    }

    static func printRows(devices: Int, concurrency: Int) throws {
        FileHandle.standardError.write(Data("hms run 1/1…\n".utf8))
        let r = try run(devices: devices, concurrency: concurrency)
        row(["HMS, \(devices) devices, concurrency \(concurrency): pushes/s", rate(r.hms.rate), "FCM \(rate(r.fcm.rate))",
             String(format: "%.2f×", r.hms.rate / r.fcm.rate), "well above FCM", r.hms.rate > 1.5 * r.fcm.rate ? "yes" : "no"])
        row(["requests / delivered", "\(r.hms.requests) / \(r.hms.delivered)", "FCM \(r.fcm.requests) / \(r.fcm.delivered)", "", "\(devices) delivered",
             r.hms.delivered == devices && r.fcm.delivered == devices ? "yes" : "no"])
    }
}
