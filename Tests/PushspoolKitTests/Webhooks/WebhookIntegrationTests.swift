import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import PushspoolCore
@testable import PushspoolKit

/// The real binary posting webhook events to a receiver (Tests/Fakes/webhook.js) that checks
/// every `Pushspool-Signature` as a real receiver must (HMAC in constant time, `t` not stale), in
/// front of the fake Web Push service (Tests/Fakes/webpush.js), whose expired subscriptions
/// answer 410.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct WebhookIntegrationTests {
    static let secret = "whsec-Fq7pLz2mKc9RtV4x"

    final class Setup {
        let dir = TempDir("pushspool-webhooks")
        var env: [String: String] { ["HOOK_SECRET": WebhookIntegrationTests.secret] }

        init(hookURL: String, events: String = #"["job.finished", "device.unregistered"]"#) throws {
            let keygen = try runPushspool(["webpush", "keygen", "--out", dir.path("vapid.pem")], cwd: dir.url)
            #expect(keygen.status == 0, "\(keygen.stderr)")
            dir.write("pushspool.json", """
                {"spool": "spool", "retry": {"max_attempts": 3, "base_delay_ms": 10, "max_delay_ms": 1000},
                 "providers": {"webpush": {"vapid_private_key_file": "vapid.pem", "subject": "mailto:ops@example.com",
                                           "allowed_hosts": ["127.0.0.1"]}},
                 "tls": {"ca_file": "\(Paths.fixture("ca.pem").path)"},
                 "metrics": {"textfile": "metrics.prom", "interval_seconds": 1},
                 "webhooks": [{"url": "\(hookURL)", "secret": "env:HOOK_SECRET", "events": \(events)}]}
                """)
            try initSpool(["--config", dir.path("pushspool.json")], cwd: dir.url)
        }

        func cli(_ args: [String]) throws -> RunResult {
            try runPushspool(args + ["--config", dir.path("pushspool.json")], cwd: dir.url, env: env)
        }

        func background() throws -> BackgroundRun {
            try BackgroundRun(["run", "--config", dir.path("pushspool.json")], cwd: dir.url, env: env)
        }

        func subscriptions(_ count: Int, gone: Int = 0) throws -> FakeServer {
            let f = try FakeServer("webpush", args: ["subscriptions": "\(count)", "gone": "\(gone)", "out": dir.path("subs.jsonl")], dir: dir)
            let r = try cli(["import", dir.path("subs.jsonl")])
            #expect(r.status == 0, "import: \(r.stderr)")
            return f
        }

        func submit(_ id: String, _ json: String = #"{"to_tag": "campaign", "pns": ["web"], "message": "hi"}"#) throws {
            dir.write("spool/tmp/\(id).json", json)
            try FileManager.default.moveItem(atPath: dir.path("spool/tmp/\(id).json"), toPath: dir.path("spool/incoming/\(id).json"))
        }

        var pending: [String] { (try? FileManager.default.contentsOfDirectory(atPath: dir.path("spool/webhooks/pending"))) ?? [] }

        /// Every file under the folder (spool, metrics, config aside from the secret's name), as text.
        func everything() -> String {
            var out = ""
            let e = FileManager.default.enumerator(atPath: dir.url.path)
            while let name = e?.nextObject() as? String {
                if let text = dir.read(name) { out += text }
            }
            return out
        }
    }

    static func events(_ receiver: FakeServer, _ type: String) -> [[String: Any]] {
        (receiver.state().list("events") as? [[String: Any]] ?? []).filter { $0.str("type") == type }
    }

    @Test func jobFinishedOncePerJobAndGoneDevicesWithoutHandles() throws {
        let receiverDir = TempDir("pushspool-hook-receiver")
        let receiver = try FakeServer("webhook", args: ["secret": Self.secret], dir: receiverDir)
        let s = try Setup(hookURL: receiver.url + "/hooks/pushspool")
        let push = try s.subscriptions(10, gone: 3)
        try s.submit("campaign")
        let run = try s.cli(["run", "--once"])
        #expect(run.status == 0, "\(run.stderr)")
        try s.submit("second", #"{"to_tag": "campaign", "pns": ["web"], "message": "again"}"#)
        let again = try s.cli(["run", "--once"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(push.state().int("gone") == 3)

        let state = receiver.state()
        #expect((state.list("problems") ?? ["?"]).isEmpty, "\(state["problems"] ?? "")")
        #expect(state.int("rejected") == 0)
        let finished = Self.events(receiver, "job.finished")
        #expect(Set(finished.compactMap { $0.dict("data")?.str("id") }) == ["campaign", "second"])
        #expect(finished.count == 2)
        // Each event once, each with its own id.
        #expect((state.dict("counts") ?? [:]).values.allSatisfy { ($0 as? Int) == 1 })
        let campaign = try #require(finished.first { $0.dict("data")?.str("id") == "campaign" }?.dict("data"))
        #expect(campaign.int("delivered") == 7 && campaign.int("unregistered") == 3 && campaign.str("status") == "done")
        #expect(campaign.list("apps") as? [String] == ["default"])

        let gone = Self.events(receiver, "device.unregistered")
        #expect(gone.count == 1)
        let devices = gone.first?.dict("data")?.list("devices") as? [[String: Any]] ?? []
        #expect(Set(devices.compactMap { $0.str("device") }) == Set((7..<10).map { "web-\($0)" }))
        #expect(devices.allSatisfy { $0.str("platform") == "web" && $0.str("app") == "default" && !($0.str("reason") ?? "").isEmpty })
        #expect(devices.allSatisfy { Set($0.keys) == ["device", "app", "platform", "reason"] })
        // Ordered per job: the campaign's devices before its job.finished.
        let ids = (state.list("events") as? [[String: Any]] ?? []).compactMap { e -> String? in
            e.str("type") == "device.unregistered" ? "gone" : e.dict("data")?.str("id")
        }
        #expect(ids.firstIndex(of: "gone")! < ids.firstIndex(of: "campaign")!)
        // No handle anywhere in what the receiver got.
        let received = String(decoding: (try? Data(contentsOf: receiver.stateFile)) ?? Data(), as: UTF8.self)
        #expect(!received.contains("/push/") && !received.contains("p256dh") && !received.contains("auth\""))
        // Delivered: nothing left pending; the metrics count them.
        #expect(s.pending.isEmpty)
        // The second run's: its one job.finished delivered, nothing waiting or given up.
        let metrics = s.dir.read("metrics.prom") ?? ""
        #expect(metrics.split(separator: "\n").contains { $0.hasPrefix("pushspool_webhooks_delivered_total") && $0.hasSuffix(" 1") }, "\(metrics)")
        #expect(metrics.split(separator: "\n").contains { $0.hasPrefix("pushspool_webhooks_failed") && $0.hasSuffix(" 0") }, "\(metrics)")
        // The secret nowhere: output, logs, spool, metrics, config --check.
        let check = try s.cli(["config", "--check"])
        let status = try s.cli(["status"])
        for text in [run.stdout, run.stderr, again.stdout, again.stderr, check.stdout, check.stderr, status.stdout, status.stderr, s.everything()] {
            #expect(!text.contains(Self.secret))
        }
        #expect(check.stdout.contains(#""secret": "***""#) || check.stdout.contains(#""secret":"***""#), "\(check.stdout)")
    }

    @Test func serverErrorsAndRetryAfterAreRetried() throws {
        let receiverDir = TempDir("pushspool-hook-receiver")
        let receiver = try FakeServer("webhook", args: ["secret": Self.secret, "fail": "1", "throttle": "1", "unavailable": "1",
                                                        "retry-after": "2"], dir: receiverDir)
        let s = try Setup(hookURL: receiver.url)
        let push = try s.subscriptions(2)
        let run = try s.background()
        try s.submit("one")
        eventually("the job.finished event accepted", lastSeen: { "\(receiver.state()) \(run.tail())" }) {
            receiver.state().int("accepted") == 1
        }
        run.terminate()
        run.waitUntilExit()
        let state = receiver.state()
        #expect(state.dict("byStatus")?.int("500") == 1 && state.dict("byStatus")?.int("429") == 1 && state.dict("byStatus")?.int("503") == 1)
        #expect(state.int("requests") == 4)
        // Retry-After: 2 honoured after the 429 and after the 503.
        let times = state.list("times") as? [Int] ?? []
        #expect(times.count == 4)
        if times.count == 4 {
            #expect(times[2] - times[1] >= 1900, "\(times)")
            #expect(times[3] - times[2] >= 1900, "\(times)")
        }
        #expect(Self.events(receiver, "job.finished").count == 1)
        #expect(push.state().int("delivered") == 2)
        #expect(s.pending.isEmpty)
    }

    @Test func receiverDownAcrossARestartGetsEveryEvent() throws {
        let receiverDir = TempDir("pushspool-hook-receiver")
        var receiver = try FakeServer("webhook", args: ["secret": Self.secret], dir: receiverDir)
        let port = receiver.port
        receiver.stop()
        let s = try Setup(hookURL: "https://127.0.0.1:\(port)/hook")
        let push = try s.subscriptions(4, gone: 1)
        for id in ["a", "b", "c"] { try s.submit(id) }
        let first = try s.cli(["run", "--once"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(!s.pending.isEmpty)   // kept for the next run
        let status = try s.cli(["status"])
        #expect(status.stdout.contains("webhooks"), "\(status.stdout)")

        receiver = try FakeServer("webhook", args: ["secret": Self.secret, "port": "\(port)"], dir: receiverDir)
        let run = try s.background()
        // Three jobs at once, each with its gone device: a job.finished and a device.unregistered each.
        eventually("every event delivered after the restart", lastSeen: { "\(receiver.state()) \(run.tail())" }) {
            receiver.state().int("accepted") == 6
        }
        eventually("webhooks/pending/ emptied", lastSeen: { "\(s.pending)" }) { s.pending.isEmpty }
        run.terminate()
        run.waitUntilExit()
        #expect(Set(Self.events(receiver, "job.finished").compactMap { $0.dict("data")?.str("id") }) == ["a", "b", "c"])
        #expect(Self.events(receiver, "device.unregistered").count == 3)
        #expect(receiver.state().int("rejected") == 0)
        #expect((receiver.state().dict("counts") ?? [:]).values.allSatisfy { ($0 as? Int) == 1 })
        #expect(push.state().int("delivered") == 9)
    }

    /// Whenever a job is in `done/`, its `job.finished` is in `webhooks/pending/` (the receiver
    /// is down, so nothing is removed); after a kill -9 and a restart every event arrives.
    @Test func jobFinishedIsOnDiskBeforeItsJobLeavesActive() throws {
        let receiverDir = TempDir("pushspool-hook-receiver")
        var receiver = try FakeServer("webhook", args: ["secret": Self.secret], dir: receiverDir)
        let port = receiver.port
        receiver.stop()
        let s = try Setup(hookURL: "https://127.0.0.1:\(port)/hook", events: #"["job.finished"]"#)
        #expect(try s.cli(["register", "--platform", "fcm", "--handle", "sandbox-token-1", "--tag", "all"]).status == 0)
        let jobs = 40
        for i in 0..<jobs { try s.submit("j\(i)", #"{"to_tag": "all", "pns": ["fcm"], "message": "m"}"#) }
        let run = try s.background()
        var looks = 0, missing: Set<String> = []
        let start = Date()
        while Date().timeIntervalSince(start) < 120 {
            let done = s.dir.list("spool/done").filter { $0.hasSuffix(".json") }
            let journalled = s.pending.map { s.dir.read("spool/webhooks/pending/\($0)") ?? "" }.joined()
            for name in done where !journalled.contains(#"\"data\":{\"id\":\""# + name.dropLast(5) + #"\""#) { missing.insert(name) }
            looks += 1
            if done.count == jobs { break }
            usleep(2_000)
        }
        kill(run.processIdentifier, SIGKILL)
        run.waitUntilExit()
        #expect(s.dir.list("spool/done").count == jobs)
        #expect(missing.isEmpty, "done before their event was written: \(missing)")
        #expect(looks > 1)

        receiver = try FakeServer("webhook", args: ["secret": Self.secret, "port": "\(port)"], dir: receiverDir)
        let again = try s.background()
        eventually("every job.finished delivered after the kill -9", lastSeen: { "\(receiver.state().int("accepted") ?? -1) \(again.tail())" }) {
            Set(Self.events(receiver, "job.finished").compactMap { $0.dict("data")?.str("id") }).count == jobs
        }
        again.terminate()
        again.waitUntilExit()
    }

    @Test func badWebhookConfigGetsOneLineErrors() throws {
        let dir = TempDir("pushspool-webhook-config")
        dir.write("pushspool.json", """
            {"spool": "spool",
             "webhooks": [{"url": "http://hooks.example.com/in", "secret": "env:HOOK_SECRET", "events": ["job.finished", "job.started"]},
                          {"url": "https://hooks.example.com/in", "events": ["job.finished"]}]}
            """)
        let r = try runPushspool(["config", "--check", "--config", dir.path("pushspool.json")], cwd: dir.url,
                                 env: ["HOOK_SECRET": WebhookIntegrationTests.secret])
        #expect(r.status != 0)
        let text = r.stdout + r.stderr
        #expect(text.contains("webhooks[0].url: must be https (plain http only to a loopback address such as 127.0.0.1), got an http URL to hooks.example.com\n"), "\(text)")
        #expect(text.contains(#"webhooks[0].events[1]: unknown event "job.started" (expected job.finished, device.unregistered)"#), "\(text)")
        #expect(text.contains("webhooks[1].secret: is required"), "\(text)")
        #expect(!text.contains(WebhookIntegrationTests.secret))
    }
}

/// The Webhooks article's signature checks (Node and Python), run as written against an event pushspool
/// signed and the receiver accepted, and against the same event with one byte changed.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct WebhookReadmeExampleTests {
    /// The article's fenced block of `language` that defines `verify`.
    static func snippet(_ language: String) -> String? {
        let readme = (try? String(contentsOf: Paths.packageRoot.appendingPathComponent("Sources/PushspoolKit/PushspoolKit.docc/WebhooksGuide.md"), encoding: .utf8)) ?? ""
        let blocks = readme.components(separatedBy: "```\(language)\n").dropFirst().map { $0.components(separatedBy: "\n```")[0] }
        return blocks.first { $0.contains("def verify(") || $0.contains("function verify(") }
    }

    static var pythonAvailable: Bool { (try? runPushspoolVia("/usr/bin/env", ["python3", "-c", "print(1)"]))?.status == 0 }

    @Test func nodeAndPythonExamplesAcceptASignedEventAndRefuseAChangedOne() throws {
        let receiverDir = TempDir("pushspool-hook-receiver")
        let receiver = try FakeServer("webhook", args: ["secret": WebhookIntegrationTests.secret], dir: receiverDir)
        let s = try WebhookIntegrationTests.Setup(hookURL: receiver.url)
        let push = try s.subscriptions(1)
        try s.submit("one")
        #expect(try s.cli(["run", "--once"]).status == 0)
        #expect(push.state().int("delivered") == 1)
        let raw = try #require((receiver.state().list("raw") as? [[String: Any]])?.last)
        let header = try #require(raw.str("signature")), body = try #require(raw.str("body"))
        #expect(raw.int("status") == 200)

        let node = try #require(Self.snippet("js"))
        let python = Self.snippet("python")
        #expect(python != nil)
        #expect(Self.pythonAvailable, "python3 runs the README's Python example (.ci/run installs it)")
        let nodeCall = node + "\nprocess.exit(verify(process.env.H, Buffer.from(process.env.B), process.env.S) ? 0 : 1)"
        let pythonCall = (python ?? "") + "\nimport os, sys\nsys.exit(0 if verify(os.environ['H'], os.environ['B'].encode(), os.environ['S']) else 1)"
        for (body, expected) in [(body, Int32(0)), (body.replacingOccurrences(of: "\"one\"", with: "\"two\""), Int32(1))] {
            let env = ["H": header, "B": body, "S": WebhookIntegrationTests.secret]
            #expect(try run(["node", "-e", nodeCall], env: env) == expected, "node, body \(body)")
            if Self.pythonAvailable {
                #expect(try run(["python3", "-c", pythonCall], env: env) == expected, "python, body \(body)")
            }
        }
        // A wrong secret is refused too.
        #expect(try run(["node", "-e", nodeCall], env: ["H": header, "B": body, "S": "another-secret-0123456789"]) == 1)
    }

    private func run(_ argv: [String], env: [String: String]) throws -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = argv
        p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        return p.terminationStatus
    }
}
