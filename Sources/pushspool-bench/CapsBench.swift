import Foundation

/// Frequency caps (README "Frequency caps"): a capped broadcast through the sandbox to N devices
/// against the same broadcast uncapped, on the same config (`frequency_cap` of 3 a day), in the
/// same round. Each spool first runs one unmeasured broadcast of its kind, so the measured capped
/// one reads a count for every device (the common case of a second campaign of the day) and
/// writes one more; the uncapped one reads and writes none.
struct CapsRound {
    var uncapped: Measured
    var capped: Measured

    /// `round`: odd rounds measure the capped side first (the machine's load drifts).
    static func run(devices: Int, round: Int) throws -> CapsRound {
        let dir = try BenchPaths.scratch("pushspool-bench-caps")
        defer { try? FileManager.default.removeItem(at: dir) }
        let binary = try BenchPaths.releaseBinary()
        let file = dir.appendingPathComponent("devices.jsonl")
        try BenchDevices(count: devices, langEvery: Int.max).write(.jsonl, to: file)
        let early = round % 2 == 1 ? try broadcast(binary, dir: dir, devices: file, count: devices, capped: true) : nil
        let uncapped = try broadcast(binary, dir: dir, devices: file, count: devices, capped: false)
        let capped = try early ?? broadcast(binary, dir: dir, devices: file, count: devices, capped: true)
        return CapsRound(uncapped: uncapped, capped: capped)
    }

    /// A spool with the devices imported, one unmeasured broadcast, then the measured `run --once`.
    static func broadcast(_ binary: String, dir: URL, devices file: URL, count: Int, capped: Bool) throws -> Measured {
        let name = capped ? "capped" : "uncapped"
        let spool = dir.appendingPathComponent("spool-\(name)").path
        let config = dir.appendingPathComponent("\(name).json")
        try #"{"spool": "spool-\#(name)", "apps": {"default": {"frequency_cap": {"max": 3, "per_hours": 24}}}}"#
            .write(to: config, atomically: true, encoding: .utf8)
        let common = ["--spool", spool, "--config", config.path]
        guard try measure(binary, ["init"] + common).status == 0 else { throw BenchError(description: "init failed") }
        let imported = try measure(binary, ["import"] + common + [file.path])
        guard imported.status == 0 else { throw BenchError(description: "import failed: \(imported.stderr)") }
        var last: Measured?
        for id in ["first", "bench"] {
            try BenchJob.drop(#"{"id": "\#(id)", "broadcast": true, "pns": ["apns", "fcm", "wns"], "message": "hello", "capped": \#(capped)}"#,
                              spool: spool)
            let sent = try measure(binary, ["run", "--once"] + common)
            guard sent.status == 0, sent.stdout.contains("job \(id): done — delivered \(count), failed 0, unregistered 0, retries") else {
                throw BenchError(description: "\(name) broadcast \(id) failed (\(sent.status)): \(sent.stdout.suffix(300)) \(sent.stderr.suffix(300))")
            }
            last = sent
        }
        try? FileManager.default.removeItem(atPath: spool)
        return last!
    }

    /// `pushspool-bench caps`: R rounds, one row per figure (medians).
    static func printRows(devices: Int, runs: Int) throws {
        var rounds: [CapsRound] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("caps run \(i + 1)/\(runs)…\n".utf8))
            rounds.append(try run(devices: devices, round: i))
        }
        func seconds(_ x: Double) -> String { String(format: "%.2f s", x) }
        let ratio = median(rounds.map { $0.capped.seconds / $0.uncapped.seconds })
        row(["capped sandbox broadcast, \(devices) devices (a second capped campaign: every device has a count): run --once",
             seconds(median(rounds.map(\.capped.seconds))), "uncapped " + seconds(median(rounds.map(\.uncapped.seconds))),
             String(format: "%.2f×", ratio), "≤ 1.3× uncapped", ratio <= 1.3 ? "yes" : "no"])
        let cpu = median(rounds.map { $0.capped.cpuSeconds / $0.uncapped.cpuSeconds })
        row(["same broadcast, CPU (whole process)", seconds(median(rounds.map(\.capped.cpuSeconds))),
             "uncapped " + seconds(median(rounds.map(\.uncapped.cpuSeconds))), String(format: "%.2f×", cpu), "", ""])
        let rss = median(rounds.map { Double($0.capped.peakRSS) })
        row(["same broadcast, peak RSS", mb(rss), "uncapped " + mb(median(rounds.map { Double($0.uncapped.peakRSS) })), "", "", ""])
    }
}
