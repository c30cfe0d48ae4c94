import Foundation

/// People's clocks (README "Campaigns on people's clocks"): a `local_time` broadcast to N devices
/// spread over the zones of 35 distinct UTC offsets (every offset one January day has between
/// UTC−10 and UTC+13:45), against a plain broadcast to the same devices, both through the sandbox
/// in the same round (`run --once`'s whole process, CPU = user + sys). The local-time job runs on
/// an injected clock (`PUSHSPOOL_TEST_CLOCK`, test and benchmark use only) set a minute after its
/// last wave, with `local_time_grace_minutes` at its maximum (1440), so all 35 waves come due at
/// once: what is measured is the waves' own cost (the zone counts, each wave's zone-by-zone
/// reads, the wave lines), not waiting. The registry's first `local_time` job also builds the
/// `devices_by_tz` index, once: it is measured on its own row, and the target row is the next job.
struct ClocksRound {
    var plain: Measured
    /// The registry's first `local_time` job, which builds `devices_by_tz`.
    var first: Measured
    /// The next one (the index exists): what each campaign costs from then on.
    var waves: Measured
    var waveCount: Int

    /// One zone per offset on 2027-01-15 (southern summer, northern winter), and a few second
    /// zones sharing an offset (a wave holds every zone of its instant).
    static let zones = [
        "Pacific/Honolulu", "Pacific/Marquesas", "America/Anchorage", "America/Los_Angeles", "America/Denver", "America/Chicago",
        "America/New_York", "America/Halifax", "America/St_Johns", "America/Sao_Paulo", "Atlantic/South_Georgia", "Atlantic/Azores",
        "Europe/London", "Europe/Paris", "Africa/Cairo", "Europe/Moscow", "Asia/Tehran", "Asia/Dubai", "Asia/Kabul", "Asia/Karachi",
        "Asia/Kolkata", "Asia/Kathmandu", "Asia/Dhaka", "Asia/Yangon", "Asia/Bangkok", "Asia/Shanghai", "Australia/Eucla",
        "Asia/Tokyo", "Australia/Darwin", "Australia/Brisbane", "Australia/Adelaide", "Australia/Sydney", "Pacific/Fiji",
        "Pacific/Auckland", "Pacific/Chatham",
        "Europe/Berlin", "Europe/Madrid", "America/Toronto", "Asia/Singapore", "Africa/Lagos",
    ]
    static let date = "2027-01-15"
    /// A minute after 09:00 in Honolulu (UTC−10), the last zone to read 09:00 that day.
    static let clock = "2027-01-15T19:01:00Z"

    static func run(devices: Int, round: Int) throws -> ClocksRound {
        let dir = try BenchPaths.scratch("pushspool-bench-clocks")
        defer { try? FileManager.default.removeItem(at: dir) }
        let binary = try BenchPaths.releaseBinary()
        let spool = dir.appendingPathComponent("spool").path
        let config = dir.appendingPathComponent("pushspool.json")
        try #"{"spool": "spool", "local_time_grace_minutes": 1440}"#.write(to: config, atomically: true, encoding: .utf8)
        let common = ["--spool", spool, "--config", config.path]
        let file = dir.appendingPathComponent("devices.jsonl")
        try BenchJob.writeDevices(devices, to: file) { i in #","tz":"\#(Self.zones[i % Self.zones.count])""# }
        guard try measure(binary, ["init"] + common).status == 0 else { throw BenchError(description: "init failed") }
        let imported = try measure(binary, ["import"] + common + [file.path])
        guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
        try? FileManager.default.removeItem(at: file)

        func broadcast(_ extra: String, env: [String: String]) throws -> Measured {
            try BenchJob.drop(#"{"id": "bench", "broadcast": true, "pns": ["apns", "fcm"], "message": "hello", "from": "bench"\#(extra)}"#, spool: spool)
            let sent = try measure(binary, ["run", "--once"] + common, env: env)
            guard sent.status == 0 else { throw BenchError(description: "broadcast failed (\(sent.status)): \(sent.stderr.suffix(300))") }
            let log = spool + "/results/bench.jsonl"
            // The summary is the last line (tail: the log is a million lines).
            let summary = try measure("/usr/bin/tail", ["-n", "1", log]).stdout
            guard summary.contains(#""delivered":\#(devices)"#) else { throw BenchError(description: "not every device was sent: \(summary)") }
            try? FileManager.default.removeItem(atPath: spool + "/outbox")
            return sent
        }
        var waveCount = 0
        func local() throws -> Measured {
            let m = try broadcast(#", "local_time": "09:00", "local_date": "\#(Self.date)""#, env: ["PUSHSPOOL_TEST_CLOCK": Self.clock])
            let log = URL(fileURLWithPath: spool).appendingPathComponent("results/bench.jsonl")
            waveCount = Int(try measure("/bin/grep", ["-c", #""type":"wave","status":"sent""#, log.path]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            try FileManager.default.removeItem(at: log)
            return m
        }
        func plain() throws -> Measured {
            let m = try broadcast("", env: [:])
            try FileManager.default.removeItem(at: URL(fileURLWithPath: spool).appendingPathComponent("results/bench.jsonl"))
            return m
        }
        let first = try local()
        // Odd rounds measure the local-time side first (the machine's load drifts).
        if round % 2 == 1 {
            let w = try local()
            return ClocksRound(plain: try plain(), first: first, waves: w, waveCount: waveCount)
        }
        let p = try plain()
        return ClocksRound(plain: p, first: first, waves: try local(), waveCount: waveCount)
    }

    static func printRows(devices: Int, runs: Int) throws {
        var rounds: [ClocksRound] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("clocks run \(i + 1)/\(runs)…\n".utf8))
            rounds.append(try run(devices: devices, round: i))
        }
        func seconds(_ x: Double) -> String { String(format: "%.2f s", x) }
        let ratio = median(rounds.map { $0.waves.cpuSeconds / $0.plain.cpuSeconds })
        let waves = rounds.map(\.waveCount).min() ?? 0
        row(["local_time broadcast, \(devices) devices, \(Self.zones.count) zones in \(waves) waves: CPU (run --once, user+sys)",
             seconds(median(rounds.map(\.waves.cpuSeconds))), "plain broadcast " + seconds(median(rounds.map(\.plain.cpuSeconds))),
             String(format: "%.3f×", ratio), "≤ 1.15×", ratio <= 1.15 ? "yes" : "no"])
        row(["same, the registry's first local_time job (builds the devices_by_tz index)", seconds(median(rounds.map(\.first.cpuSeconds))),
             "plain broadcast " + seconds(median(rounds.map(\.plain.cpuSeconds))),
             String(format: "%.3f×", median(rounds.map { $0.first.cpuSeconds / $0.plain.cpuSeconds })), "", ""])
        row(["same, wall time", seconds(median(rounds.map(\.waves.seconds))), "plain broadcast " + seconds(median(rounds.map(\.plain.seconds))),
             String(format: "%.3f×", median(rounds.map { $0.waves.seconds / $0.plain.seconds })), "", ""])
    }
}
