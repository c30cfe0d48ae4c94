import Foundation
import Synchronization
import Testing
@testable import PushspoolKit

/// One PostgreSQL connection pool per process (`registry_connections`): a `run` sending a queue
/// campaign with a frequency cap and a shared `max_per_second` (registry, queue and its LISTEN,
/// cap counts, rate buckets, provider pauses and credentials all at work) never holds more
/// connections than that, as the database itself counts them (`pg_stat_activity`, told apart
/// by the `application_name` its URI names).
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"), .serialized)
struct ConnectionBudgetTests {
    @Test func aRunHoldsAtMostRegistryConnections() throws {
        let budget = 3
        let name = "pushspool-budget-\(getpid())"
        let uri = try RegistryFixture.postgresDatabase() + "&application_name=\(name)"
        let h = try SharedQueueHarness(hosts: ["a"], devices: 2000, chunkSize: 100, concurrency: 64, delayMS: 5,
                                       extraProvider: #", "max_per_second": 1500"#,
                                       extraConfig: """
                                           , "registry_connections": \(budget),
                                           "apps": {"shop": {"frequency_cap": {"max": 5, "per_hours": 24}, "max_per_second": 1800}},
                                           "default_app": "shop"
                                           """,
                                       uri: uri)
        try h.start()
        // Sampled on a connection of the test's own (another application_name) while it runs
        // (from here on the harness itself opens no connection until the run stopped).
        let most = Mutex(0), samples = Mutex(0)
        let stop = Atomic<Bool>(false)
        let samplerURI = uri.replacingOccurrences(of: name, with: "sampler")
        let sampler = Thread {
            guard let c = try? PostgresConnection(uri: samplerURI) else { return }
            defer { c.close() }
            while !stop.load(ordering: .acquiring) {
                if let r = try? c.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", [name]) {
                    let n = Int(r.int64(0, 0))
                    most.withLock { $0 = max($0, n) }
                    samples.withLock { $0 += 1 }
                }
                Thread.sleep(forTimeInterval: 0.005)
            }
        }
        sampler.start()
        try h.drop(on: "a", "everyone", #"{"id":"everyone","to_tag":"all","pns":["fcm"],"message":"hello","capped":true}"#)
        let summary = h.waitForSummary(on: "a", "everyone")
        let statuses = h.stopAll()
        stop.store(true, ordering: .releasing)
        while sampler.isExecuting { Thread.sleep(forTimeInterval: 0.01) }
        try #require(summary != nil, "no summary: \(h.log("a").suffix(3000))")
        #expect((summary?["delivered"] as? NSNumber)?.intValue == 2000, "\(summary ?? [:])")
        #expect(statuses["a"] == 0, "\(statuses)")
        // The cap and the rate buckets were used through the pool.
        #expect(Int(try h.query("SELECT count(*) FROM cap_counts").first?.first.flatMap { $0 } ?? "0") ?? 0 > 0)
        #expect(try h.query("SELECT name FROM rate_buckets ORDER BY name").compactMap { $0.first ?? nil } == ["app:shop", "provider:fcm"])
        let seen = most.withLock { $0 }
        print("registry_connections \(budget): at most \(seen) connections seen in \(samples.withLock { $0 }) samples")
        // The LISTEN and at least one statement at once were seen: the sampler counts this run.
        #expect(seen >= 2 && seen <= budget, "at most \(seen) connections from one run, budget \(budget)")
    }
}
