import Foundation
import Testing

/// Issue 24 item 4: a paused job shows its pacing in `status` and `status --json`
/// (`spread_over_seconds` was null while paused), as the README's steering example shows.
@Suite struct PausedStatusTests {
    @Test("paused with no checkpoint yet: status says its pacing, --json carries spread_over_seconds")
    func pausedJobKeepsItsPacing() throws {
        let (dir, spool) = try initializedSpool("pushspool-paused")
        // A job a dispatcher claimed and was paused in before its first checkpoint: the job
        // file in active/, the request in control/, a result log of a few lines.
        dir.write("spool/active/spring-sale.json", #"{"id": "spring-sale", "broadcast": true, "pns": ["fcm"], "message": "sale", "spread_over_seconds": 3600}"#)
        dir.write("spool/control/spring-sale.pause", "")
        dir.write("spool/results/spring-sale.jsonl", """
            {"type":"job","id":"spring-sale","file":"spring-sale.json","received_at":"2026-01-01T00:00:00Z","pns":["fcm"],"targets":4}
            {"type":"delivery","platform":"fcm","provider":"sandbox","device":"d1","status":"delivered","attempts":1,"code":"200","reason":null,"provider_id":null,"at":"2026-01-01T00:00:01Z"}

            """)
        let json = try runPushspool(["status", "--json"] + spool)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout) \(json.stderr)")
        let active = try #require((doc["active"] as? [[String: Any]])?.first)
        #expect(active["state"] as? String == "paused")
        #expect(active["spread_over_seconds"] as? Int == 3600, "\(active)")
        let text = try runPushspool(["status"] + spool)
        #expect(text.stdout.contains("paused spring-sale: 1/4 targets final, paced over 60 min"), "\(text.stdout)")
    }
}

/// A paused capped campaign: `status` counts the devices its frequency cap held back, as
/// `status --json` does (`capped`).
@Suite struct PausedCappedStatusTests {
    @Test func pausedCappedJobShowsItsCappedCount() throws {
        let (dir, spool) = try initializedSpool("pushspool-paused-capped")
        dir.write("spool/active/sale.json", #"{"id": "sale", "broadcast": true, "pns": ["fcm"], "message": "sale", "capped": true}"#)
        dir.write("spool/control/sale.pause", "")
        dir.write("spool/results/sale.jsonl", """
            {"type":"job","id":"sale","file":"sale.json","received_at":"2026-01-01T00:00:00Z","pns":["fcm"],"targets":4}
            {"type":"delivery","platform":"fcm","provider":"sandbox","device":"d1","status":"delivered","attempts":1,"code":"200","reason":null,"provider_id":null,"at":"2026-01-01T00:00:01Z"}
            {"type":"delivery","platform":"fcm","provider":"sandbox","device":"d2","status":"capped","attempts":0,"code":null,"reason":"frequency_cap: 3 per 24 h reached","provider_id":null,"at":"2026-01-01T00:00:01Z"}

            """)
        let json = try runPushspool(["status", "--json"] + spool)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout) \(json.stderr)")
        let active = try #require((doc["active"] as? [[String: Any]])?.first)
        #expect(active["capped"] as? Int == 1, "\(active)")
        let text = try runPushspool(["status"] + spool)
        #expect(text.stdout.contains("paused sale: 2/4 targets final, 1 capped"), "\(text.stdout)")
    }
}
