import Foundation

/// Live Activity updates against alerts: N of each from `pushspool run --once` to the same nginx
/// (a fixed 200, not the bottleneck), both in every round so both meet the same machine. The payloads are of a size (`{"aps":{"alert":"From bench: hello"}}` against an
/// update carrying its timestamp, event and content state); what differs is the push type's
/// header, topic and payload shaping. The registry holds N device tokens and N activity tokens
/// under the same tag, so each job's N are picked out by its push type's token kind (in SQL).
struct KindsRound {
    var alerts: NginxRound.Campaign
    var updates: NginxRound.Campaign

    static let update = #"{"id":"bench","to_tag":"bench","pns":"apns","push_type":"liveactivity","live_activity":{"event":"update","content_state":{"score":"2-1"}}}"#

    static func run(count: Int, concurrency: Int, round: Int) throws -> KindsRound {
        let dir = try BenchPaths.scratch("pushspool-bench-kinds")
        defer { try? FileManager.default.removeItem(at: dir) }
        let setup = try BenchAPNs(dir: dir, devices: count * 2)
        let mixed = ["device", "liveactivity"]
        let fixed = try NginxRound.fixed(try Nginx.binary(), dir: dir)
        defer { fixed.stop() }
        let worker = fixed.workerPID()
        // Which kind goes first alternates by round: the first campaign of a round meets a colder
        // machine (the first run measured 1.19× with alerts always first).
        func alerts() throws -> NginxRound.Campaign {
            try setup.campaign(name: "alert-\(round)", port: fixed.port, count: count, concurrency: concurrency, serverPID: worker, kinds: mixed)
        }
        func updates() throws -> NginxRound.Campaign {
            try setup.campaign(name: "la-\(round)", port: fixed.port, count: count, concurrency: concurrency, serverPID: worker, job: update, kinds: mixed)
        }
        if round % 2 == 0 {
            let a = try alerts()
            return KindsRound(alerts: a, updates: try updates())
        }
        let u = try updates()
        return KindsRound(alerts: try alerts(), updates: u)
    }

    static func printRows(count: Int, concurrency: Int, runs: Int) throws {
        var rounds: [KindsRound] = []
        for i in 0..<runs {
            FileHandle.standardError.write(Data("kinds run \(i + 1)/\(runs)…\n".utf8))
            rounds.append(try run(count: count, concurrency: concurrency, round: i))
        }
        let ratio = median(rounds.map { $0.updates.client.rate / $0.alerts.client.rate })
        row(["nginx, \(count) Live Activity updates vs \(count) alerts, \(concurrency) streams: rate (whole process)",
             rate(median(rounds.map { $0.updates.client.rate })), "alerts \(rate(median(rounds.map { $0.alerts.client.rate })))",
             String(format: "%.3f×", ratio), "≥ 0.95×", ratio >= 0.95 ? "yes" : "no"])
        let each = rounds.map { String(format: "%.2f", $0.updates.client.rate / $0.alerts.client.rate) }.joined(separator: ", ")
        FileHandle.standardError.write(Data("kinds: update/alert rate per round: \(each)\n".utf8))
        let all = rounds.allSatisfy { r in
            [r.alerts, r.updates].allSatisfy { $0.delivered == count && $0.distinct == count && $0.lines == count }
        }
        row(["delivered / distinct / lines, both kinds, every run", all ? "\(count) each" : "short", "", "", "\(count) each", all ? "yes" : "no"])
    }
}
