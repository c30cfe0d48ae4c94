import Foundation
import Testing

/// The running `serve` against its OpenAPI document, with Python's `openapi-spec-validator` and
/// `schemathesis` (Tests/OpenAPI/check_serve.py, which says what it checks): every operation
/// tried with requests generated from the schemas, no `5xx`, every answer's status, content type
/// and body as documented, and serve still answering after each pass. serve runs as it is
/// deployed: a SQLite registry, two apps (so `/apps/{app}/api/…` answers), app users, a service
/// token, the dashboard's operators, and `run` beside it sending the jobs the run submits to the
/// fake APNs and FCM servers.
@Suite(.serialized) struct OpenAPIConformanceTests {
    /// Why the check cannot run here, or nil (CI installs both: .ci/run, which also makes their
    /// absence a failure).
    static var missing: String? {
        if (try? DashboardBrowserTests.runCommand(["python3", "-c", "import openapi_spec_validator"])) != 0 {
            return "python3 cannot import openapi_spec_validator (pip install openapi-spec-validator)"
        }
        if (try? DashboardBrowserTests.runCommand(["schemathesis", "--version"])) != 0 {
            return "schemathesis is not installed (pip install schemathesis)"
        }
        return nil
    }

    @Test(.enabled(if: Paths.nodeAvailable)) func serveAnswersWhatItsDocumentSays() throws {
        if let missing = Self.missing {
            // In CI (.ci/run sets PUSHSPOOL_OPENAPI=required) a missing tool is a failure.
            #expect(ProcessInfo.processInfo.environment["PUSHSPOOL_OPENAPI"] != "required", "\(missing)")
            print("OpenAPIConformanceTests skipped: \(missing)")
            return
        }
        let dir = TempDir("pushspool-openapi-run")
        let fakes = try FakeProviderPair(in: dir, apnsArgs: ["topic": "com.example.app,com.example.shop"])
        FrontDoorFiles.write(into: dir)
        // Failed logins are counted per client: with 127.0.0.1 a trusted proxy, each pass names
        // its own client in X-Forwarded-For. Fuzzing is not abuse: the per-user limit is raised.
        // Every 5xx fails the check, so a machine busy with the rest of the suite must not turn a
        // slow answer into the deadline's 503: the deadline is a minute here.
        dir.write("pushspool.json", """
            {"spool": "spool", "registry": "registry.sqlite", "retry": {"max_attempts": 2, "base_delay_ms": 10, "max_delay_ms": 100},
             "apps": {"chat": {"routes": {"apns": "apns", "fcm": "fcm"}, "apns_topic": "com.example.app"},
                      "shop": {"routes": {"apns": "apns", "fcm": "fcm"}, "apns_topic": "com.example.shop"}},
             "default_app": "chat",
             \(fakes.configSections),
             \(FrontDoorFiles.section(#", "operators_file": "operators.htpasswd", "rate_limit_per_minute": 1000000, "request_timeout_seconds": 60, "trusted_proxies": ["127.0.0.1"]"#))}
            """)
        try initSpool(["--config", dir.path("pushspool.json")], cwd: dir.url)
        let serve = try ServeProcess(config: dir.path("pushspool.json"), cwd: dir.url)
        let run = try BackgroundRun(["run", "--config", dir.path("pushspool.json")], cwd: dir.url)
        defer {
            run.terminate()
            _ = serve.stop()
        }
        let reports = Paths.packageRoot.appendingPathComponent(".build/openapi-check")
        try FileManager.default.createDirectory(at: reports, withIntermediateDirectories: true)
        // CI's budget: 40 cases an operation and phase, about two minutes. A deeper run here:
        // PUSHSPOOL_OPENAPI_EXAMPLES=300 (and the stateful phase with PUSHSPOOL_OPENAPI_STATEFUL=1).
        let environment = ProcessInfo.processInfo.environment
        let examples = environment["PUSHSPOOL_OPENAPI_EXAMPLES"].flatMap(Int.init) ?? 40
        let stateful = environment["PUSHSPOOL_OPENAPI_STATEFUL"] == "1"
        let budget = Double(max(290, examples * 8)) * (stateful ? 2 : 1)
        let settings: [String: Any] = [
            "base": "http://127.0.0.1:\(serve.port)", "document": OpenAPIDocumentTests.file.path, "apns_state": fakes.apns.stateFile.path,
            "app_user": ["alice", FrontDoorFiles.passwords["alice"]!], "bearer": FrontDoorFiles.token, "operator": ["olivia", "s3cret"],
            "apps": ["chat", "shop"], "max_examples": examples, "stateful": stateful, "seed": 46, "workers": 1,
            "pass_timeout": budget - 50, "report_dir": reports.path,
        ]
        try JSONSerialization.data(withJSONObject: settings).write(to: dir.url.appendingPathComponent("openapi.json"))
        let script = Paths.testsDir.appendingPathComponent("OpenAPI/check_serve.py").path
        let r = try DashboardBrowserTests.runCommandOutput(["python3", script, dir.path("openapi.json")], cwd: dir.url, timeout: budget)
        // What it checked, with when (the run's time budget is visible in CI's log).
        print(r.output.split(separator: "\n").filter { $0.contains("] ok:") || $0.contains("] total:") || $0.hasPrefix("PASSED") }
            .joined(separator: "\n"))
        #expect(r.status == 0 && r.output.contains("\nPASSED in "), "\(r.output.suffix(12000))\n--- serve:\n\(serve.log.suffix(2000))")
        #expect(serve.process.isRunning, "serve stopped during the run: \(serve.log.suffix(2000))")
    }
}
