import Foundation
import Testing
@testable import PushspoolKit

/// `max_per_second` across hosts: three dispatchers, each on a spool of its own, sharing one
/// PostgreSQL registry, each sending its own broadcast through the sandbox capped at 300/s.
/// The sandbox's outbox lines carry their send time (ms), the provider's view.
@Suite(.enabled(if: PostgresCluster.isAvailable, "\(PostgresCluster.unavailableReason ?? "")"), .serialized)
struct SharedRateCapTests {
    static let hosts = ["a", "b", "c"]
    static let perHost = 600

    @Test func threeHostsTogetherHoldOneCap() throws {
        let uri = try RegistryFixture.postgresDatabase()
        let dir = TempDir("shared-rate")
        let env = ["PUSHSPOOL_TEST_REGISTRY": uri]
        func config(_ host: String) -> [String] { ["--config", dir.path("\(host).json")] }
        for host in Self.hosts {
            dir.write("\(host).json", #"""
                {"spool": "\#(host)", "registry": "env:PUSHSPOOL_TEST_REGISTRY", "concurrency": 32,
                 "providers": {"sandbox": {"max_per_second": 300}}}
                """#)
            let r = try runPushspool(["init"] + config(host), env: env)
            try #require(r.status == 0, "\(r.stderr)")
        }
        var devices = ""
        for (h, host) in Self.hosts.enumerated() {
            for i in 0..<Self.perHost {
                devices += #"{"id":"\#(host)\#(i)","platform":"fcm","handle":"tok-\#(h * Self.perHost + i)","tags":["\#(host)"]}"# + "\n"
            }
        }
        dir.write("devices.jsonl", devices)
        let imported = try runPushspool(["import", dir.path("devices.jsonl")] + config("a"), env: env)
        try #require(imported.status == 0, "\(imported.stderr)")
        for host in Self.hosts {
            let spool = try Spool(root: dir.url.appendingPathComponent(host))
            try spool.submit(Array(#"{"id":"wave-\#(host)","to_tag":"\#(host)","pns":["fcm"],"message":"m"}"#.utf8),
                             name: "wave-\(host).json")
        }
        let runs = try Self.hosts.map { try startPushspool(["run", "--once"] + config($0), env: env) }
        for run in runs { run.waitUntilExit() }
        #expect(runs.allSatisfy { $0.terminationStatus == 0 })

        let parse = ISO8601DateFormatter()
        parse.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var times: [Double] = []
        for host in Self.hosts {
            let sent = dir.jsonLines("\(host)/outbox/fcm.jsonl").compactMap { ($0["at"] as? String).flatMap(parse.date(from:)) }
            #expect(sent.count == Self.perHost, "host \(host) sent \(sent.count)")
            times += sent.map(\.timeIntervalSince1970)
        }
        times.sort()
        try #require(times.count == Self.hosts.count * Self.perHost)
        // The busiest one-second window, sliding over every send.
        var busiest = 0, start = 0
        for end in times.indices {
            while times[end] - times[start] >= 1 { start += 1 }
            busiest = max(busiest, end - start + 1)
        }
        let rate = Double(times.count - 1) / (times.last! - times.first!)
        print("shared max_per_second 300 over 3 hosts: busiest second \(busiest), \(String(format: "%.0f", rate))/s over the run")
        #expect(busiest <= 330, "the provider saw \(busiest) in one second")
        #expect(rate >= 240, "together the hosts sent \(rate)/s")
    }
}
