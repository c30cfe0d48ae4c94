import Foundation
import Testing
@testable import PushspoolKit
#if canImport(Glibc)
import Glibc
#endif

/// What an operator sees and scrapes, with the real binary against the fake APNs: the metrics
/// file read back by the exposition rules, structured log lines, repeated warnings counted, and
/// the live progress line on a real terminal (tmux).
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct ObservabilityIntegrationTests {
    @Test func metricsFileAgreesWithTheResultLog() throws {
        let s = try APNsSpool(extraConfig: #", "metrics": {"textfile": "spool/pushspool.prom", "interval_seconds": 1}"#)
        for (id, prefix, _, _, _) in APNsIntegrationTests.script { try s.register(id: id, handle: APNsSpool.token(prefix, 7)) }
        s.drop("j1", #"{"id":"j1","to_tag":"username:alice","pns":["apns"],"message":"hi","from":"bob"}"#)
        s.drop("bad", #"{"id":"bad","to_tag":"username:alice","pns":["apns"]}"#)
        let run = try s.runOnce()
        #expect(run.status == 0, "\(run.stderr)")
        let text = try #require(s.dir.read("spool/pushspool.prom"))
        let m = try Exposition(text)

        let summary = try #require(s.results("j1").last)
        for status in ["delivered", "failed", "unregistered"] {
            #expect(m.sum("pushspool_deliveries_total", where: ["status": status, "platform": "apns", "provider": "apns"])
                    == Double(summary[status] as? Int ?? -1), "\(status)")
        }
        #expect(m.value("pushspool_retries_total", ["provider": "apns"]) == Double(summary["retries"] as? Int ?? -1))
        #expect(m.value("pushspool_jobs_total", ["status": "done"]) == 1)
        #expect(m.value("pushspool_jobs_total", ["status": "failed"]) == 1)
        #expect(m.value("pushspool_queue_jobs", ["folder": "done"]) == 1)
        #expect(m.value("pushspool_queue_jobs", ["folder": "failed"]) == 1)
        #expect(m.value("pushspool_queue_jobs", ["folder": "active"]) == 0)
        #expect(m.value("pushspool_targets_remaining") == 0)
        #expect(m.value("pushspool_provider_paused", ["provider": "apns"]) == 0)
        let requests = waitForIdle(s.fake, answered: 19)["requests"] as? Int
        #expect(m.value("pushspool_provider_request_duration_seconds_count", ["provider": "apns"]) == requests.map(Double.init),
                "one observation per request the fake saw")
        // Every answer that was not a delivery is counted by code, retried ones too; none is in
        // flight at the end, and the session is still open when the file is written last.
        let delivered = summary["delivered"] as? Int ?? -1
        #expect(m.sum("pushspool_provider_errors_total", where: ["provider": "apns"]) == requests.map { Double($0 - delivered) })
        #expect(m.value("pushspool_provider_errors_total", ["provider": "apns", "code": "410"]) == 3)
        #expect(m.value("pushspool_provider_requests_in_flight", ["provider": "apns"]) == 0)
        #expect((m.value("pushspool_provider_connections", ["provider": "apns"]) ?? 0) >= 1)
        let perms = try FileManager.default.attributesOfItem(atPath: s.dir.path("spool/pushspool.prom"))[.posixPermissions] as? Int
        #expect(perms == 0o644, "readable by the collector")
    }

    /// A running dispatcher's providers in `status`: one line each, and in `--json` their
    /// connections and recent failed answers, with the provider's word and what it means.
    @Test func statusShowsEachProvidersConnectionsAndRecentErrors() throws {
        let s = try APNsSpool()
        for (id, prefix, _, _, _) in APNsIntegrationTests.script { try s.register(id: id, handle: APNsSpool.token(prefix, 7)) }
        let run = try startPushspool(["run"] + s.common)
        defer { if run.isRunning { run.terminate() }; run.waitUntilExit() }
        s.drop("j1", #"{"id":"j1","to_tag":"username:alice","pns":["apns"],"message":"hi","from":"bob"}"#)
        eventually("the job to end", timeout: 60) { s.results("j1").last?["type"] as? String == "summary" }
        let line = eventually("status to show the provider", timeout: 20, {
            (try? runPushspool(["status"] + s.common).stdout)?.split(separator: "\n").first { $0.contains("provider apns:") }.map(String.init) ?? ""
        }, until: { $0.contains("1 connection, 0 in flight") })
        #expect(line.contains("failed answers, the last"), "\(line)")
        let r = try runPushspool(["status", "--json"] + s.common)
        let doc = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any] ?? [:]
        let apns = (doc["providers"] as? [[String: Any]] ?? []).first { $0["provider"] as? String == "apns" } ?? [:]
        #expect(apns["connections"] as? Int == 1 && apns["in_flight"] as? Int == 0, "\(apns)")
        let recent = apns["recent_errors"] as? [[String: Any]] ?? []
        let reasons = Set(recent.compactMap { $0["reason"] as? String })
        #expect(reasons.isSuperset(of: ["Unregistered", "BadDeviceToken", "ExpiredToken"]), "\(recent)")
        let bad = recent.first { $0["reason"] as? String == "BadDeviceToken" } ?? [:]
        #expect(bad["code"] as? String == "400" && (bad["meaning"] as? String ?? "").hasPrefix("The token is not a valid APNs token"))
        #expect(!r.stdout.contains("400b"), "no device token in status")
    }

    @Test func structuredLogsAndRepeatedWarningsCounted() throws {
        // Apple refuses every token: the warning about it comes once per request, 20 targets.
        let s = try APNsSpool(fakeArgs: ["auth-reason": "InvalidProviderToken"], maxAttempts: 2)
        for i in 0..<20 { try s.register(id: "d\(i)", handle: APNsSpool.token("0000", i)) }
        s.drop("j", #"{"id":"j","to_tag":"username:alice","pns":["apns"],"message":"hi"}"#)
        let run = try s.cli(["run", "--once", "--log-format", "logfmt"] + s.common)
        let lines = run.stderr.split(separator: "\n").map(String.init)
        let refused = lines.filter { $0.contains("refused a provider token") }
        #expect(refused.count == 2, "the warning once, then its count: \(refused)")
        #expect(refused.last?.contains("repeated=") == true)
        #expect(lines.allSatisfy { $0.hasPrefix("time=") && $0.contains(" level=") && $0.contains(" msg=") }, "one logfmt event per line: \(lines)")
        #expect(lines.contains { $0.contains(#"msg="job finished" job=j status=done"#) }, "\(lines)")
        #expect(lines.contains { $0.contains(#"msg="job started" job=j"#) })
        #expect(!run.stderr.contains("bearer") && !run.stderr.contains("eyJ"), "no credential in the log")

        s.drop("k", #"{"id":"k","to_tag":"username:alice","pns":["apns"],"message":"hi"}"#)
        let json = try s.cli(["run", "--once", "--log-format", "json", "--log-level", "warning"] + s.common)
        for line in json.stderr.split(separator: "\n") {
            let event = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(event?["level"] as? String == "warning" || event?["level"] as? String == "error", "\(line)")
        }
        let usage = try s.cli(["run", "--once", "--log-format", "yaml"] + s.common)
        #expect(usage.status == 64)
        #expect(usage.stderr.contains("--log-format: unknown format \"yaml\" (expected text, logfmt, json)"))
    }

    static var tmuxAvailable: Bool {
        ["/usr/bin/tmux", "/usr/local/bin/tmux"].contains { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test(.enabled(if: tmuxAvailable)) func liveProgressLineOnATerminal() throws {
        let s = try APNsSpool(fakeArgs: ["hold-ms": "40", "track-limit": "0"], concurrency: 16)
        try s.importDevices(8_000, tag: "all")
        s.drop("sale", #"{"id":"sale","to_tag":"all","pns":["apns"],"message":"m"}"#)
        let session = "pushspool-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let command = ([Paths.binary.path, "run", "--once"] + s.common).joined(separator: " ") + "; sleep 60"
        // new-session forks the tmux server, which outlives the client: started through
        // system(3), which waits for the client alone (Foundation's Process would wait on the
        // server's inherited descriptors too).
        func shell(_ line: String) -> Int32 { system(line) }
        func quoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        func tmux(_ args: [String]) throws -> String {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = ["tmux"] + args
            let out = Pipe()
            p.standardOutput = out
            p.standardError = FileHandle.nullDevice
            try p.run()
            let data = readToEnd(out.fileHandleForReading.fileDescriptor)
            p.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        #expect(shell("tmux new-session -d -s \(session) -x 120 -y 20 \(quoted(command))") == 0)
        defer { _ = shell("tmux kill-session -t \(session) 2>/dev/null") }
        func screen() -> String { (try? tmux(["capture-pane", "-p", "-t", session])) ?? "" }

        // The line counts up with a rate and the time left, in place (one line, not a scroll).
        let pattern = try NSRegularExpression(pattern: #"job sale: (\d+) / 8000 \((\d+)%\), (\d+)/s, \d+ s left"#)
        func progress(_ text: String) -> [Int] {
            pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
                Range($0.range(at: 1), in: text).flatMap { Int(text[$0]) }
            }
        }
        var seen: [Int] = []
        var mostLinesAtOnce = 0
        eventually("the progress line to move three times", timeout: 30, poll: 0.05, lastSeen: { "\(seen); screen: \(screen())" }) {
            let shown = progress(screen())
            mostLinesAtOnce = max(mostLinesAtOnce, shown.count)
            if let n = shown.first, seen.last != n { seen.append(n) }
            return seen.count >= 3
        }
        #expect(mostLinesAtOnce == 1, "one line per job, redrawn in place")
        #expect(seen == seen.sorted())

        let cancel = try s.cli(["cancel", "sale"] + s.common)
        #expect(cancel.status == 0)
        var final = ""
        eventually("the cancel to show on the terminal", timeout: 30, poll: 0.05, lastSeen: { final }) {
            final = screen()
            return final.contains("job sale: cancelled")
        }
        #expect(progress(final).isEmpty, "the progress line is cleared at the end: \(final)")
    }
}
