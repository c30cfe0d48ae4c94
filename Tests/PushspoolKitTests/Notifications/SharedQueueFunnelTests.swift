import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// A tracked campaign on two hosts sharing a PostgreSQL registry and queue: every device's push
/// carries its own id (whichever host sent its chunk), and the funnel says 1000/1000/1000/600/200
/// (600 devices report `received`, some two or three times; 200 `opened`) from either host's desk
/// and CLI, also after the hosts stopped.
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"), .serialized)
struct SharedQueueFunnelTests {
    @Test func funnelOfAThousandOnEveryHost() throws {
        let h = try SharedQueueHarness(hosts: ["a", "b"], devices: 1000, chunkSize: 250, delayMS: 5)
        try h.start()
        try h.drop(on: "a", "camp", #"{"id":"camp","to_tag":"all","pns":["fcm"],"message":"spring sale","track":true}"#)
        let summary = h.waitForSummary(on: "a", "camp")
        try #require((summary?["delivered"] as? NSNumber)?.intValue == 1000, "\(summary ?? [:])")
        // Each push: the text and its own id in data.notification_id.
        let perToken = h.fcm.state()["perToken"] as? [String: [String: Any]] ?? [:]
        // Then a secure job, dropped on the other host.
        try h.drop(on: "b", "sec", #"{"id":"sec","to_tag":"all","pns":["fcm"],"message":"the vault code is 4711","secure":true}"#)
        let secure = h.waitForSummary(on: "b", "sec")
        #expect(h.stopAll().values.allSatisfy { $0 == 0 })
        #expect((secure?["delivered"] as? NSNumber)?.intValue == 1000, "\(secure ?? [:])")
        let secured = h.fcm.state()["perToken"] as? [String: [String: Any]] ?? [:]
        #expect((0..<1000).allSatisfy { i in
            ((secured["tok-\(i)"]?["message"] as? [String: Any])?["data"] as? [String: String])?.keys.sorted() == ["secureId"]
        })
        var ids: [String] = []
        for i in 0..<1000 {
            let data = (perToken["tok-\(i)"]?["message"] as? [String: Any])?["data"] as? [String: String]
            #expect(data?["message"] == "spring sale")
            if let id = data?["notification_id"] { ids.append(id) }
        }
        try #require(ids.count == 1000 && Set(ids).count == 1000)
        #expect(try h.chunksByHost("camp").count == 2, "both hosts sent a share")

        // The apps report (through any host's serve: its desk on the shared registry).
        let registry = try PostgresRegistry(uri: h.uri)
        defer { registry.close() }
        let metrics = Metrics()
        let queue = PostgresJobQueue(uri: h.uri, host: "test", maxConnections: 1)
        defer { queue.close() }
        let desk = NotificationDesks.desk(registry: registry, spool: try Spool(root: h.dir.url.appendingPathComponent("b")), queue: queue,
                                          metrics: metrics)
        var events: [NotificationEvent] = []
        for (i, id) in ids.enumerated() {
            if i < 600 { for _ in 0...(i % 3) { events.append(NotificationEvent(id: id, type: .received, at: nil)) } }
            if i < 200 { events.append(NotificationEvent(id: id, type: .opened, at: nil)) }
        }
        var statuses: [NotificationEventStatus] = []
        for start in stride(from: 0, to: events.count, by: NotificationEvent.maxBatch) {
            statuses += desk.record(Array(events[start..<min(start + NotificationEvent.maxBatch, events.count)]), user: nil, now: Date())
        }
        #expect(statuses.count(where: { $0 == .recorded }) == 800)
        #expect(metrics.render(Metrics.Gauges()).contains(#"pushspool_notification_events_total{app="default",platform="fcm",type="received"} 600"#))

        func steps(_ f: Funnel?) -> [Int] { f.map { [$0.total.targets, $0.total.sent, $0.total.delivered, $0.total.received, $0.total.opened] } ?? [] }
        // Host b has no result log of it: the queue's copy gives the delivery counts (and they are
        // kept in the registry from then on: the job has ended).
        #expect(try registry.trackedJob(id: "camp")?.deliveries == nil)
        #expect(steps(try desk.funnel(job: "camp")) == [1000, 1000, 1000, 600, 200])
        #expect(try registry.trackedJob(id: "camp")?.deliveries?.routes.count == 1)
        let otherDesk = NotificationDesks.desk(registry: try PostgresRegistry(uri: h.uri), spool: try Spool(root: h.dir.url.appendingPathComponent("a")))
        #expect(steps(try otherDesk.funnel(job: "camp")) == [1000, 1000, 1000, 600, 200])
        for host in ["a", "b"] {
            let r = try h.cli(host, ["results", "camp", "--funnel", "--json"])
            let f = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
            #expect(["targets", "sent", "delivered", "received", "opened"].map { f?[$0] as? Int } == [1000, 1000, 1000, 600, 200],
                    "host \(host): \(r.stdout)\(r.stderr)")
            let s = try h.cli(host, ["status", "camp"])
            #expect(s.stdout.contains("targets 1000 → sent 1000 (100%) → delivered 1000 (100%) → received 600 (60%) → opened 200 (33.3%)"),
                    "host \(host): \(s.stdout)\(s.stderr)")
        }

        // The secure job's text: in the registry (once) and the queue's copy of the job until it
        // expires; then in neither, nor in any file of either host's spool.
        func queued() throws -> String { try h.query("SELECT body FROM queue_jobs WHERE id = 'sec'").first?.first.flatMap { $0 } ?? "" }
        #expect(try queued().contains("4711"))
        let erased = try registry.eraseExpiredContent(now: Date().addingTimeInterval(8 * 24 * 3600))
        #expect(erased.map(\.id) == ["sec"])
        #expect(try !queued().contains("4711") && queued().contains("\"secure\""))
        #expect(try h.query("SELECT count(*) FROM notification_jobs WHERE content LIKE '%4711%'").first?.first == "0")
        let spools = ["a", "b"].map { h.dir.url.appendingPathComponent($0) }
        let holding = spools.flatMap { SecureJobRunTests.files(holding: ["4711"], under: $0) }
        #expect(holding == [h.dir.url.appendingPathComponent("b/done/sec.json").path], "only the 0600 job file until the sweep: \(holding)")
    }
}
