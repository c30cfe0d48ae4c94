import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// Frequency caps through the real binary on the sandbox (README "Frequency caps"): capped jobs
/// count against `apps.<app>.frequency_cap`, uncapped ones do not, a device over its cap ends
/// `capped` (summary, report, metrics), and a capped job killed with SIGKILL and resumed counts
/// no device twice (checked in the registry's `cap_counts`).
@Suite(.serialized) struct FrequencyCapTests {
    func setUp(_ prefix: String, devices: [(id: String, tags: String)]) throws -> (TempDir, [String]) {
        let (dir, spool) = try initializedSpool(prefix)
        dir.write("pushspool.json", """
            {"apps": {"shop": {"frequency_cap": {"max": 2, "per_hours": 24}}, "chat": {}}, "default_app": "shop",
             "metrics": {"textfile": "\(dir.path("metrics.prom"))"}}
            """)
        let args = spool + ["--config", dir.path("pushspool.json")]
        var lines = ""
        lines.reserveCapacity(devices.count * 80)
        for d in devices { lines += #"{"id": "\#(d.id)", "platform": "fcm", "handle": "h-\#(d.id)", "tags": \#(d.tags)}"# + "\n" }
        dir.write("devices.jsonl", lines)
        let r = try runPushspool(["import", dir.path("devices.jsonl")] + args)
        try #require(r.status == 0, "\(r.stderr)")
        return (dir, args)
    }

    func drop(_ dir: TempDir, _ id: String, _ fields: String) throws {
        try Data(#"{"id": "\#(id)", "to_tag": "all", "pns": ["fcm"], "message": "m"\#(fields)}"#.utf8)
            .write(to: URL(fileURLWithPath: dir.path("spool/incoming/\(id).json")))
    }

    func statuses(_ dir: TempDir, _ id: String) -> [String: DeliveryStatus] {
        var out: [String: DeliveryStatus] = [:]
        for d in dir.records("spool/results/\(id).jsonl").compactMap(\.asDelivery) { out[d.device ?? "?"] = d.status }
        return out
    }

    /// One query's integer answer from the registry file.
    func sql(_ dir: TempDir, _ query: String) throws -> Int64 {
        let db = try SQLiteDatabase(path: dir.path("spool/registry.sqlite"))
        defer { db.close() }
        let stmt = try db.statement(query)
        defer { stmt.reset() }
        return try stmt.step() ? stmt.int64(0) : -1
    }

    @Test func theThirdCappedJobEndsCappedAndUncappedOnesDoNotCount() throws {
        let (dir, args) = try setUp("caps-three", devices: [("d1", #"["all"]"#), ("d2", #"["all"]"#), ("d3", #"["all"]"#)])
        for (id, fields) in [("c1", #", "capped": true"#), ("u1", ""), ("c2", #", "capped": true"#), ("u2", #", "capped": false"#),
                             ("c3", #", "capped": true"#)] {
            try drop(dir, id, fields)
            let r = try runPushspool(["run", "--once"] + args)
            #expect(r.status == 0, "\(r.stderr)")
            if id == "c3" { #expect(r.stdout.contains("job c3: done — delivered 0, failed 0, unregistered 0, capped 3, retries 0"), "\(r.stdout)") }
        }
        let all = ["d1", "d2", "d3"]
        for id in ["c1", "u1", "c2", "u2"] {
            #expect(statuses(dir, id) == Dictionary(uniqueKeysWithValues: all.map { ($0, .delivered) }), "\(id)")
        }
        #expect(statuses(dir, "c3") == Dictionary(uniqueKeysWithValues: all.map { ($0, .capped) }))
        let capped = try #require(dir.records("spool/results/c3.jsonl").compactMap(\.asDelivery).first)
        #expect(capped.reason == "frequency_cap: 2 per 24 h reached" && capped.attempts == 0, "\(capped)")
        let summary = try #require(dir.records("spool/results/c3.jsonl").compactMap(\.asSummary).last)
        #expect((summary.status, summary.delivered, summary.capped, summary.matched) == (.done, 0, 3, 3))
        #expect((dir.read("spool/results/c3.jsonl") ?? "").contains(#""unregistered":0,"capped":3,"#))
        // The registry counted the capped jobs that were sent, and nothing else.
        #expect(try sql(dir, "SELECT count(*) FROM cap_counts") == 6)
        #expect(try sql(dir, "SELECT count(*) FROM cap_counts WHERE job IN ('u1', 'u2', 'c3')") == 0)
        let metrics = dir.read("metrics.prom") ?? ""
        #expect(metrics.split(separator: "\n").contains { $0.hasPrefix("pushspool_deliveries_total{") && $0.contains(#"status="capped""#) && $0.hasSuffix(" 3") },
                "\(metrics)")
    }

    /// 100,000 devices, cap 2: `warm` (capped) reaches the even half; `big` (capped, paced so that
    /// it is still sending) is killed with SIGKILL and resumed; `after` (capped) then finds the
    /// even half at its cap. `big` caps nobody (its own reservations, made before the kill, do
    /// not count against it) and the registry holds exactly one count per device and job.
    @Test func aCappedJobKilledAndResumedCountsNoDeviceTwice() throws {
        let count = 100_000
        let (dir, args) = try setUp("caps-kill", devices: (0..<count).map { ("d\($0)", $0 % 2 == 0 ? #"["all", "even"]"# : #"["all"]"#) })
        try Data(#"{"id": "warm", "to_tag": "even", "pns": ["fcm"], "message": "m", "capped": true}"#.utf8)
            .write(to: URL(fileURLWithPath: dir.path("spool/incoming/warm.json")))
        #expect(try runPushspool(["run", "--once"] + args).status == 0)
        try drop(dir, "big", #", "capped": true, "spread_over_seconds": 12"#)
        let p = try startPushspool(["run", "--once"] + args)
        let log = dir.path("spool/results/big.jsonl")
        func logged() -> Int { ((try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? 0) ?? 0 }
        // A delivery line is about 180 bytes: kill after some 20,000 of them.
        eventually("big is a fifth done", timeout: 60, lastSeen: { "\(logged()) bytes logged" }) { logged() > 20_000 * 180 }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        #expect(dir.list("spool/active") == ["big.json"], "killed mid-way")
        let countedAtKill = try sql(dir, "SELECT count(*) FROM cap_counts WHERE job = 'big'")
        #expect(countedAtKill > 0 && countedAtKill < Int64(count), "\(countedAtKill) counted at the kill")
        let resumed = try runPushspool(["run", "--once"] + args, timeout: 300)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let big = try #require(dir.records("spool/results/big.jsonl").compactMap(\.asSummary).last)
        #expect((big.status, big.delivered, big.capped) == (.done, count, 0))
        #expect(try sql(dir, "SELECT count(*) FROM cap_counts WHERE job = 'big'") == Int64(count))
        #expect(try sql(dir, "SELECT count(DISTINCT device) FROM cap_counts WHERE job = 'big'") == Int64(count))
        #expect(try sql(dir, "SELECT count(*) FROM (SELECT device FROM cap_counts GROUP BY device HAVING count(*) > 2)") == 0)
        #expect(try sql(dir, "SELECT count(*) FROM cap_counts c JOIN devices d ON d.rowid = c.device WHERE c.job = 'big'") == Int64(count))
        try drop(dir, "after", #", "capped": true"#)
        #expect(try runPushspool(["run", "--once"] + args, timeout: 300).status == 0)
        let after = try #require(dir.records("spool/results/after.jsonl").compactMap(\.asSummary).last)
        #expect((after.delivered, after.capped) == (count / 2, count / 2))
        #expect(try sql(dir, "SELECT count(*) FROM cap_counts") == Int64(count / 2 + count + count / 2))
    }
}
