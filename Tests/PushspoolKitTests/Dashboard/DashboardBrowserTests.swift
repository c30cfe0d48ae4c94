import Foundation
import Testing

/// The dashboard in a real browser: Debian's headless `chromium` and `chromium-driver`, driven by
/// Python's `selenium` (Tests/Browser/dashboard_test.py, which says what it checks), against
/// `serve` and a running dispatcher sending to the fake APNs and FCM servers. Screenshots of
/// every page at 1440 and 390 px go to `.build/dashboard-screenshots/`; with
/// `PUSHSPOOL_DOC_SCREENSHOTS=1` the README's two are written into the DocC catalog's Resources.
@Suite(.serialized) struct DashboardBrowserTests {
    /// Why the browser test cannot run here, or nil (CI installs all three: .ci/run, which also
    /// makes their absence a failure).
    static var missing: String? {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"] where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is not installed (apt-get install chromium chromium-driver)"
        }
        let probe = try? runCommand(["python3", "-c", "import selenium"])
        return probe == 0 ? nil : "python3 cannot import selenium (pip install selenium, or apt-get install python3-selenium)"
    }

    static func runCommand(_ argv: [String]) throws -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = argv
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        return p.terminationStatus
    }

    @Test(.enabled(if: Paths.nodeAvailable)) func anOperatorWatchesSteersComposesAndSendsSafely() throws {
        if let missing = Self.missing {
            // In CI (.ci/run sets PUSHSPOOL_BROWSER=required) a missing browser is a failure.
            #expect(ProcessInfo.processInfo.environment["PUSHSPOOL_BROWSER"] != "required", "\(missing)")
            print("DashboardBrowserTests skipped: \(missing)")
            return
        }
        let dir = TempDir("pushspool-dashboard")
        // Per-token detail for the first 64 tokens only (the tracked job's, sent first): the
        // fake's state file stays small while 16,000 pushes pass.
        let fakes = try FakeProviderPair(in: dir, apnsArgs: ["track-limit": "64"])
        let (apns, fcm) = (fakes.apns, fakes.fcm)
        FrontDoorFiles.write(into: dir)
        dir.write("pushspool.json", """
            {"spool": "spool", "concurrency": 64, "retry": {"max_attempts": 2, "base_delay_ms": 10, "max_delay_ms": 100},
             "routes": {"apns": "apns", "fcm": "fcm"},
             \(fakes.configSections),
             "http": {"listen": "127.0.0.1:0", "users_file": "users.htpasswd", "tokens_file": "tokens.txt",
                      "operators_file": "operators.htpasswd", "rate_limit_per_minute": 100000}}
            """)
        try initSpool(["--config", dir.path("pushspool.json")], cwd: dir.url)
        // 20,000 for the campaign (16,000 iOS, 4,000 Android: the fake FCM keeps every token's
        // message, so fewer there; 10 of its tokens refused as malformed, 10 gone, 10 of another
        // project), 50 VIPs for the composed job, 5 tracked, 2 for hostile strings, 40 for jobs
        // that are cancelled.
        var lines: [String] = []
        func device(_ platform: String, _ handle: String, _ tag: String) {
            lines.append(#"{"platform": "\#(platform)", "handle": "\#(handle)", "tags": ["\#(tag)"]}"#)
        }
        func token(_ n: Int) -> String { String(format: "%064x", n) }
        for i in 1...16_000 { device("apns", token(i), "bf") }
        for i in 1...4_000 { device("fcm", i <= 10 ? "invalid-\(i)" : i <= 20 ? "gone-\(i)" : i <= 30 ? "mismatch-\(i)" : "fcm-tok-\(i)", "bf") }
        for i in 1...25 { device("apns", token(20_000 + i), "vip"); device("fcm", "vip-\(i)", "vip") }
        let tracked = (1...5).map { token(30_000 + $0) }
        for t in tracked { device("apns", t, "tracked") }
        for i in 1...2 { device("fcm", "xss-\(i)", "xss") }
        for i in 1...40 { device("fcm", "later-\(i)", "later") }
        dir.write("devices.jsonl", lines.joined(separator: "\n") + "\n")
        let imported = try runPushspool(["import", dir.path("devices.jsonl"), "--config", dir.path("pushspool.json")], cwd: dir.url)
        try #require(imported.status == 0, "\(imported.stderr)")

        let serve = try ServeProcess(config: dir.path("pushspool.json"), cwd: dir.url)
        let run = try BackgroundRun(["run", "--config", dir.path("pushspool.json")], cwd: dir.url)
        defer {
            run.terminate()
            _ = serve.stop()
        }
        let shots = Paths.packageRoot.appendingPathComponent(".build/dashboard-screenshots")
        let docs = ProcessInfo.processInfo.environment["PUSHSPOOL_DOC_SCREENSHOTS"] == "1"
            ? Paths.packageRoot.appendingPathComponent("Sources/PushspoolKit/PushspoolKit.docc/Resources") : nil
        if let docs { try FileManager.default.createDirectory(at: docs, withIntermediateDirectories: true) }
        let settings: [String: Any] = [
            "base": "http://127.0.0.1:\(serve.port)", "operator": ["olivia", "s3cret"], "app_user": ["alice", FrontDoorFiles.passwords["alice"]!],
            "bearer": FrontDoorFiles.token, "apns_state": apns.stateFile.path, "fcm_state": fcm.stateFile.path,
            "results_dir": dir.path("spool/results"), "shots_dir": shots.path, "docs_dir": docs?.path ?? NSNull(),
            "tracked_tokens": tracked, "cli": [Paths.binary.path], "config": dir.path("pushspool.json"),
        ]
        try JSONSerialization.data(withJSONObject: settings).write(to: dir.url.appendingPathComponent("browser.json"))
        let script = Paths.testsDir.appendingPathComponent("Browser/dashboard_test.py").path
        let r = try Self.runCommandOutput(["python3", script, dir.path("browser.json")], cwd: dir.url, timeout: 420)
        // What it checked, with when (the run's time budget is visible in CI's log).
        print(r.output.split(separator: "\n").filter { $0.hasPrefix("ok:") || $0.hasPrefix("PASSED") || $0.hasPrefix("FAILED") }.joined(separator: "\n"))
        #expect(r.status == 0 && r.output.contains("\nPASSED in "), "\(r.output.suffix(3000))\n--- serve:\n\(serve.log.suffix(1500))\n--- run:\n\(run.tail(20))")
    }

    /// A command's exit status and its stdout and stderr together (also the OpenAPI check's runner).
    static func runCommandOutput(_ argv: [String], cwd: URL, timeout: Double) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = argv
        p.currentDirectoryURL = cwd
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let fd = pipe.fileHandleForReading.fileDescriptor
        nonisolated(unsafe) var data = Data()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { data = readToEnd(fd); done.signal() }
        if done.wait(timeout: .now() + timeout) == .timedOut {
            p.terminate()
            done.wait()
        }
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
