import Foundation
import Testing
@testable import PushspoolKit
import PushspoolTestSupport
import PushspoolCore

@Suite struct MetricsRenderTests {
    @Test func rendersValidExpositionWithCumulativeBuckets() throws {
        let m = Metrics()
        for _ in 0..<3 { m.delivery(platform: "apns", provider: "apns", status: "delivered") }
        m.delivery(platform: "fcm", provider: "azure", status: "failed")
        m.retry(provider: "apns")
        m.job(status: "done")
        for s in [0.001, 0.02, 0.02, 0.3, 100] { m.requestDuration(provider: "apns", seconds: s) }
        var g = Metrics.Gauges()
        g.queue = [("incoming", 2), ("active", 1)]
        g.targetsRemaining = 7
        g.providers = [("apns", false), ("we\"ird\\name", true)]
        let text = m.render(g)
        let e = try Exposition(text)
        #expect(e.types["pushspool_deliveries_total"] == "counter")
        #expect(e.types["pushspool_provider_request_duration_seconds"] == "histogram")
        #expect(e.value("pushspool_deliveries_total", ["platform": "apns", "provider": "apns", "status": "delivered", "app": "default"]) == 3)
        #expect(e.value("pushspool_retries_total", ["provider": "apns"]) == 1)
        #expect(e.value("pushspool_queue_jobs", ["folder": "incoming"]) == 2)
        #expect(e.value("pushspool_targets_remaining") == 7)
        #expect(e.value("pushspool_provider_paused", ["provider": "we\"ird\\name"]) == 1, "label values escaped and read back")
        #expect(e.value("pushspool_provider_request_duration_seconds_bucket", ["provider": "apns", "le": "0.005"]) == 1)
        #expect(e.value("pushspool_provider_request_duration_seconds_bucket", ["provider": "apns", "le": "0.025"]) == 3)
        #expect(e.value("pushspool_provider_request_duration_seconds_bucket", ["provider": "apns", "le": "30"]) == 4)
        #expect(e.value("pushspool_provider_request_duration_seconds_bucket", ["provider": "apns", "le": "+Inf"]) == 5)
        #expect(e.value("pushspool_provider_request_duration_seconds_count", ["provider": "apns"]) == 5)
        #expect(abs((e.value("pushspool_provider_request_duration_seconds_sum", ["provider": "apns"]) ?? 0) - 100.341) < 1e-9)
    }

    /// The reader the tests rely on refuses what a scraper refuses.
    @Test("the exposition reader rejects broken documents", arguments: [
        "x 1",                                                          // no final newline
        "# TYPE x counter\nx -1\n",                                     // negative counter
        "# TYPE x gauge\nx 1\n# TYPE x gauge\n",                        // second TYPE
        "x 1\n# TYPE x gauge\n",                                        // TYPE after samples
        "# TYPE x gauge\nx 1\n# TYPE y gauge\ny 1\nx 2\n",              // family split
        "x{a=\"1} 1\n",                                                 // unterminated value
        "x{1a=\"1\"} 1\n",                                              // bad label name
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",   // not cumulative
        "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",                            // no +Inf
        "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",                         // +Inf ≠ count
        "x one\n",                                                      // bad value
    ])
    func readerRejects(_ text: String) {
        #expect(throws: Exposition.Violation.self) { try Exposition(text) }
    }
}

@Suite struct RateLimiterTests {
    @Test func reservationsAreEvenlySpacedAcrossCallers() {
        let clock = FakeSeconds(1000)
        let limiter = RateLimiter(perSecond: 200, clock: { clock.now })
        let times = (0..<400).map { _ in limiter.reserve() }
        #expect(times.first == 1000)
        for (a, b) in zip(times, times.dropFirst()) { #expect(abs(b - a - 0.005) < 1e-9) }
        // No 1-s window holds more than 200.
        #expect(times.filter { $0 < 1001 - 1e-6 }.count == 200)
        // A retry due later reserves at or after its due time, and pushes later requests back.
        let retry = limiter.reserve(notBefore: 1010)
        #expect(retry == 1010)
        #expect(limiter.reserve() == 1010.005)
    }

    @Test func idleTimeIsNotSavedUpAsABurst() {
        let clock = FakeSeconds(1000)
        let limiter = RateLimiter(perSecond: 10, clock: { clock.now })
        _ = limiter.reserve()
        clock.now = 2000
        #expect(limiter.reserve() == 2000)
        #expect(limiter.reserve() == 2000.1)
    }
}

final class FakeSeconds: @unchecked Sendable {
    var now: Double
    init(_ now: Double) { self.now = now }
}

@Suite struct LoggerTests {
    @Test func repeatedEventsAreCountedNotRepeated() {
        let sink = CollectingLogHandler()
        let log = Log(minimum: .info, handler: sink)
        for _ in 0..<40 { log.warning("apns: Apple refused a provider token", [(.provider, "apns")]) }
        log.warning("something else")
        #expect(sink.events.count == 2, "the first of each, then silence")
        log.flushRepeats()
        let last = sink.events.last
        #expect(sink.events.count == 3)
        #expect(last?.message.hasPrefix("(repeated 39 more times in ") == true, "\(last?.message ?? "")")
        #expect(last?.metadata.contains { $0 == ("repeated", "39") } == true)
    }

    @Test func levelsMetadataAndChildLoggers() {
        let sink = CollectingLogHandler()
        let log = Log(minimum: .warning, handler: sink)
        log.info("hidden")
        let job = log.with(.job, "spring")
        job.error("boom", [(.provider, "fcm")])
        #expect(sink.events.count == 1)
        #expect(sink.events[0].metadata.map { "\($0.0)=\($0.1)" } == ["job=spring", "provider=fcm"])
        log.configure(minimum: .debug)
        job.debug("now shown")
        #expect(sink.events.count == 2)
    }

    @Test func formats() throws {
        let event = LogEvent(time: Date(timeIntervalSince1970: 1_700_000_000.25), level: .warning,
                             message: "token \"refused\"\nagain", metadata: [("job", "j 1"), ("count", "3")])
        #expect(StreamLogHandler.render(event, .text) == #"pushspool: warning: job j 1: token "refused"\nagain count=3"#)
        #expect(StreamLogHandler.render(event, .logfmt)
                == #"time=2023-11-14T22:13:20.250Z level=warning msg="token \"refused\"\nagain" job="j 1" count=3"#)
        let json = try JSONSerialization.jsonObject(with: Data(StreamLogHandler.render(event, .json).utf8)) as? [String: Any]
        #expect(json?["msg"] as? String == "token \"refused\"\nagain")
        #expect(json?["level"] as? String == "warning")
        #expect(json?["job"] as? String == "j 1")
        #expect(json?["count"] as? Int == 3)
        #expect(json?["time"] as? String == "2023-11-14T22:13:20.250Z")
    }
}

@Suite struct ControlAndProgressTests {
    @Test func controlRequestsAreReadFromTheFolder() throws {
        let dir = TempDir("pushspool-control")
        let controls = JobControls(directory: dir.url)
        #expect(controls.isEmpty)
        try controls.write(.pause, id: "a.b")
        try controls.write(.pause, id: "c")
        try controls.write(.cancel, id: "c")
        dir.write(".half-written.cancel.tmp", "")
        dir.write("notes.txt", "")
        #expect(controls.refresh())
        #expect(controls.request(for: "a.b") == .pause)
        #expect(controls.request(for: "c") == .cancel, "cancel wins over pause")
        #expect(controls.request(for: "x") == nil)
        #expect(!controls.refresh(), "nothing changed")
        controls.clear("c")
        #expect(controls.request(for: "c") == nil)
        #expect(dir.list("").filter { !$0.hasPrefix(".") } == ["a.b.pause", "notes.txt"])
    }

    @Test func progressLineText() {
        var p = Activity.Progress(id: "sale", targets: 50_000, finished: 12_034, failed: 3, finishedThisRun: 12_034,
                                  started: Date(), spreadOverSeconds: 600)
        p.rate = 812
        #expect(RunMonitor.line(p) == "job sale: 12034 / 50000 (24%), 812/s, 47 s left, 3 failed, paced over 10 min")
        p.rate = nil
        p.failed = 0
        p.spreadOverSeconds = nil
        #expect(RunMonitor.line(p, state: .cancelling) == "job sale: 12034 / 50000 (24%) [cancelling]")
    }

    @Test func activityRateIsOverRecentSamples() {
        let counter = Counter()
        let activity = Activity()
        let start = Date()
        activity.begin(Activity.Progress(id: "j", targets: 1000, finished: 0, failed: 0, finishedThisRun: 0, started: start)) { (counter.value, 0) }
        _ = activity.snapshot(now: start)
        counter.value = 300
        let p = activity.snapshot(now: start.addingTimeInterval(2)).first
        #expect(p?.rate == 150)
        #expect(p?.eta == 700.0 / 150)
        #expect(activity.targetsRemaining == 700)
        activity.end("j")
        #expect(activity.snapshot().isEmpty)
    }
}

final class Counter: @unchecked Sendable { var value = 0 }

@Suite struct ControlConfigTests {
    @Test func maxPerSecondAndMetricsAreRead() throws {
        let c = try ConfigLoader.parse(try JSONParser.parse("""
            {"providers": {"sandbox": {"max_per_second": 200}, "azure": {"connection_string": "Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=v", "hub": "h", "max_per_second": 0.5}},
             "metrics": {"textfile": "m.prom", "interval_seconds": 2}}
            """))
        #expect(c.maxPerSecond == ["sandbox": 200, "azure": 0.5])
        #expect(c.metrics.textfile == "m.prom")
        #expect(c.metrics.intervalSeconds == 2)
    }

    @Test func badValuesNameTheirKey() throws {
        let json = try JSONParser.parse(#"{"providers": {"sandbox": {"max_per_second": 0}}, "metrics": {"interval_seconds": 0, "textfil": "x"}}"#)
        #expect(throws: ConfigError.self) { try ConfigLoader.parse(json) }
        do {
            _ = try ConfigLoader.parse(json)
        } catch {
            #expect(error.problems.contains { $0.hasPrefix("providers.sandbox.max_per_second: must be a number") })
            #expect(error.problems.contains { $0.hasPrefix("metrics.interval_seconds:") })
            #expect(error.problems.contains { $0.hasPrefix("metrics.textfil: unknown key (did you mean \"textfile\"?)") })
        }
    }

    @Test func spreadOverSecondsIsAJobField() throws {
        let job = try JobParser.parse(Array(#"{"to_tag":"a","pns":["apns"],"message":"m","spread_over_seconds":3600}"#.utf8), fileName: "j.json")
        guard case .send(let send) = job.kind else { Issue.record("not a send job"); return }
        #expect(send.spreadOverSeconds == 3600)
        #expect(throws: JobError.self) {
            try JobParser.parse(Array(#"{"to_tag":"a","pns":["apns"],"message":"m","spread_over_seconds":0}"#.utf8), fileName: "j.json")
        }
    }
}
