import Foundation
import Testing
@testable import PushspoolKit

/// The job queue in PostgreSQL (README "Several hosts"): three `run` processes, each on a spool of
/// its own, one registry, one fake FCM answering after 100 ms.
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"), .serialized)
struct SharedQueueTests {
    static let broadcast = #"{"id":"everyone","to_tag":"all","pns":["fcm"],"message":"hello"}"#

    @Test func oneBroadcastDroppedOnOneHostIsSentByEveryHost() throws {
        let h = try SharedQueueHarness(devices: 3000, chunkSize: 200)
        try h.start()
        try h.drop(on: "a", "everyone", Self.broadcast)
        let summary = h.waitForSummary(on: "a", "everyone")
        let statuses = h.stopAll()
        try #require(summary != nil, "no summary on host a")
        #expect(summary?["status"] as? String == "done")
        #expect((summary?["delivered"] as? NSNumber)?.intValue == 3000, "\(summary ?? [:])")
        #expect(statuses.values.allSatisfy { $0 == 0 }, "\(statuses)")
        // Each device once, on the provider's side and in the one result log.
        let tokens = h.perToken()
        #expect(tokens.count == 3000 && tokens.values.allSatisfy { $0 == 1 }, "\(tokens.values.filter { $0 != 1 }.count) tokens not delivered once")
        let lines = h.deliveries(on: "a", "everyone")
        #expect(lines.count == 3000)
        #expect(Set(lines.compactMap { $0["device"] as? String }).count == 3000)
        // Every host took a share: 15 chunks of 200.
        let shares = try h.chunksByHost("everyone")
        #expect(shares.values.reduce(0, +) == 15, "\(shares)")
        #expect(shares.count == 3, "chunks by host: \(shares)")
        // Any host reads the results: the spool's log on a, the queue's copy on b and c.
        for host in ["b", "c"] {
            let r = try h.cli(host, ["results", "everyone"])
            #expect(r.status == 0, "\(r.stderr)")
            let types = r.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .compactMap { $0["type"] as? String }
            #expect(types.filter { $0 == "delivery" }.count == 3000 && types.first == "job" && types.last == "summary", "host \(host)")
        }
    }
}
