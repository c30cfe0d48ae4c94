import Foundation
import Testing

/// A campaign to Huawei and Amazon devices through the job queue in PostgreSQL: two hosts share
/// its chunks, each sending to the fake Push Kit (tokens batched per request) and the fake ADM.
/// Every device reaches its service once, the illegal and gone ones leave the shared registry, a
/// canonical id replaces its handle there, and the origin's one result log has every device.
@Suite(.enabled(if: PostgresCluster.isAvailable && Paths.nodeAvailable, "\(PostgresCluster.unavailableReason ?? "node")"), .serialized)
struct HMSADMSharedQueueTests {
    @Test func twoHostsShareTheChunksOfAHuaweiAndAmazonCampaign() throws {
        let fakes = TempDir("hms-adm-queue-fakes")
        let hms = try FakeServer("hms", args: ["delay-ms": "20"], dir: fakes)
        let adm = try FakeServer("adm", dir: fakes)
        let h = try SharedQueueHarness(hosts: ["a", "b"], devices: 10, chunkSize: 100, otherProviders: """
            , "hms": {"app_id": "104000001", "client_id": "104000001", "client_secret": "hms-secret",
                      "endpoint": "\(hms.url)", "token_endpoint": "\(hms.url)/oauth2/v3/token"},
            "adm": {"client_id": "amzn1.application-oa2-client.test", "client_secret": "adm-secret",
                    "endpoint": "\(adm.url)", "token_endpoint": "\(adm.url)/auth/o2/token"}
            """)
        let huawei = 1200, amazon = 400
        let illegal: Set<Int> = [7, 450, 1199], gone: Set<Int> = [3, 399], renamed: Set<Int> = [10, 200]
        var lines: [String] = []
        for i in 0..<huawei {
            lines.append(#"{"id": "h\#(i)", "platform": "hms", "handle": "\#(illegal.contains(i) ? "illegal" : "tok")-\#(i)", "tags": ["all"]}"#)
        }
        for i in 0..<amazon {
            let handle = gone.contains(i) ? "gone-\(i)" : renamed.contains(i) ? "old-\(i)" : "ok-\(i)"
            lines.append(#"{"id": "a\#(i)", "platform": "adm", "handle": "\#(handle)", "tags": ["all"]}"#)
        }
        h.dir.write("more.jsonl", lines.joined(separator: "\n") + "\n")
        let imported = try h.cli("a", ["import", h.dir.path("more.jsonl")])
        try #require(imported.status == 0, "\(imported.stderr)")

        try h.start()
        try h.drop(on: "a", "fire", #"{"id": "fire", "to_tag": "all", "pns": ["hms", "adm"], "title": "Sale", "message": "50% off"}"#)
        let summary = h.waitForSummary(on: "a", "fire", timeout: 120)
        let statuses = h.stopAll()
        try #require(summary != nil, "no summary on a: \(h.log("a").suffix(1500))\n--- b:\n\(h.log("b").suffix(1500))")
        #expect(statuses.values.allSatisfy { $0 == 0 }, "\(statuses)")
        let total = huawei + amazon, lost = illegal.count + gone.count
        #expect(summary?["status"] as? String == "done")
        #expect((summary?["delivered"] as? NSNumber)?.intValue == total - lost, "\(summary ?? [:])")
        #expect((summary?["unregistered"] as? NSNumber)?.intValue == lost, "\(summary ?? [:])")

        // Both hosts took chunks of it (of 100 devices each).
        let shares = try h.chunksByHost("fire")
        #expect(shares.values.reduce(0, +) >= 16, "\(shares)")
        #expect(shares.count == 2, "chunks by host: \(shares)")
        // One result line per device at the origin.
        let logged = h.deliveries(on: "a", "fire")
        #expect(logged.count == total && Set(logged.compactMap { $0["device"] as? String }).count == total)
        #expect(Set(logged.filter { $0["status"] as? String == "unregistered" }.compactMap { $0["device"] as? String })
                == Set(illegal.map { "h\($0)" } + gone.map { "a\($0)" }))

        // Each token once at Huawei, batched, never twice in a request; each id once at Amazon.
        let s = hms.syncedState()
        #expect((s.list("problems") ?? ["?"]).isEmpty, "\(s["problems"] ?? "")")
        #expect(s.int("delivered") == huawei - illegal.count && s.int("duplicateDeliveries") == 0 && s.int("duplicateInRequest") == 0, "\(s)")
        let perSend = (s.list("tokensPerSend") as? [Int]) ?? []
        #expect(perSend.reduce(0, +) == huawei && perSend.count < huawei / 2, "\(perSend.count) requests for \(huawei) tokens")
        let a = adm.state()
        #expect((a.list("problems") ?? ["?"]).isEmpty, "\(a["problems"] ?? "")")
        let attempts = (a.dict("perDevice") ?? [:]).compactMapValues { ($0 as? [String: Any])?.int("attempts") }
        #expect(attempts.count == amazon && attempts.values.allSatisfy { $0 == 1 }, "\(attempts.filter { $0.value != 1 })")

        // The shared registry: the illegal and gone devices deleted, the canonical ids in place.
        let left = try h.query("SELECT id, handle FROM devices WHERE platform IN ('hms', 'adm')")
        let handles = Dictionary(left.map { ($0[0] ?? "", $0[1] ?? "") }) { a, _ in a }
        #expect(handles.count == total - lost)
        #expect(illegal.allSatisfy { handles["h\($0)"] == nil } && gone.allSatisfy { handles["a\($0)"] == nil })
        #expect(renamed.allSatisfy { handles["a\($0)"] == "new-\($0)" }, "\(renamed.map { handles["a\($0)"] ?? "-" })")
    }
}
