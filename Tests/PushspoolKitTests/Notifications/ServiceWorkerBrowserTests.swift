import Foundation
import Testing

/// The browser service worker of `examples/clients/web`, run in headless Chromium (Python's
/// selenium and the DevTools protocol: `Tests/Browser/service_worker.py`) against the real `serve`
/// after `run` sent alice's browser a secure job (the sandbox's Web Push): the push reaches the
/// worker through `ServiceWorker.deliverPushMessage`, and the worker fetches the content, shows
/// the notification and reports `received`. Clicking a notification is the one step a headless
/// browser cannot take (no notification UI, no DevTools command): the script says so.
///
/// The browser gets a window on Xvfb (`xvfb-run`): headless Chromium accepts `showNotification`
/// but lists nothing, and without Xvfb the script runs headless and says that step cannot be seen.
/// Skipped, saying why, only when Chromium is not installed here; in CI (`PUSHSPOOL_BROWSER=required`,
/// set by `.ci/run`, which installs Chromium, chromedriver, Xvfb and selenium) a missing browser is a failure.
@Suite(.serialized) struct ServiceWorkerBrowserTests {
    static let chromium = "/usr/bin/chromium", chromedriver = "/usr/bin/chromedriver"
    static var required: Bool { ProcessInfo.processInfo.environment["PUSHSPOOL_BROWSER"] == "required" }
    static var browserInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: chromium) && FileManager.default.isExecutableFile(atPath: chromedriver)
    }

    static let xvfbRun = ["/usr/bin/xvfb-run"].first { FileManager.default.isExecutableFile(atPath: $0) }

    static let subscription = #"{"endpoint":"https://fcm.googleapis.com/fcm/send/browser-1","keys":{"p256dh":"\#(RFC8291Example.uaPublic)","auth":"\#(RFC8291Example.auth)"}}"#

    @Test(.enabled(if: browserInstalled || required, "Chromium and chromedriver are not installed (apt-get install chromium chromium-driver)"))
    func theServiceWorkerFetchesShowsAndReportsReceived() throws {
        #expect(Self.browserInstalled, "Chromium and chromedriver must be installed where the browser test is required (.ci/run installs them)")
        let f = try SandboxFrontDoor()
        #expect(try f.cli(["register", "--platform", "web", "--handle", Self.subscription, "--tag", "username:alice", "--id", "alice-browser"]).status == 0)
        let job = #"{"id": "web-1", "to_tag": "username:alice", "pns": ["web"], "from": "bank", "title": "Bank", "message": "Your code is 424242", "secure": true}"#
        var a = try f.serve.client().request("POST", "/v1/jobs", headers: [("Authorization", FrontDoorFiles.bearer)], body: job)
        #expect(a.status == 202, "\(a.text)")
        let run = try f.cli(["run", "--once"])
        #expect(run.status == 0, "\(run.stderr)")
        let sent = try #require(f.outbox("web").first, "nothing in the sandbox's web outbox")
        let id = try #require((sent["payload"] as? [String: Any])?["secureId"] as? String, "\(sent)")

        let script = Paths.testsDir.appendingPathComponent("Browser/service_worker.py").path
        let site = Paths.packageRoot.appendingPathComponent("examples/clients/web").path
        // A window on a virtual display: headless Chromium would show the notification but list none.
        let display = Self.xvfbRun.map { [$0, "-a"] } ?? []
        let result = try runPushspoolVia("/usr/bin/env", display + ["python3", script, "--serve", "http://127.0.0.1:\(f.serve.port)", "--site", site,
                                                                     "--user", "alice", "--password", FrontDoorFiles.passwords["alice"]!, "--id", id]
                                                                    + (display.isEmpty ? ["--headless"] : []))
        let report = try #require(try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
                                  "the browser script printed no report: \(result.stdout) \(result.stderr)")
        let steps = report["steps"] as? [[String: Any]] ?? []
        for s in steps where s["ok"] as? Bool == false { Issue.record("browser step failed: \(s["step"] ?? "") — \(s["detail"] ?? "")") }
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        // What the user saw: the secure text, never the id.
        let shown = report["notifications"] as? [[String: Any]] ?? []
        #expect(shown.count == 1 && shown.first?["title"] as? String == "Bank" && shown.first?["body"] as? String == "From bank: Your code is 424242",
                "\(shown)")
        // The step a headless browser cannot take is named, not passed over.
        #expect(steps.contains { $0["ok"] is NSNull && ($0["step"] as? String)?.contains("opened") == true }, "\(steps)")
        #expect((report["console_errors"] as? [String])?.isEmpty == true, "\(report["console_errors"] ?? "")")

        // serve counted it: received once (the fetch, then the worker's own report a duplicate).
        a = try f.serve.client().request("GET", "/v1/jobs/web-1", headers: [("Authorization", FrontDoorFiles.bearer)])
        let funnel = try #require((a.json as? [String: Any])?["funnel"] as? [String: Any], "\(a.text)")
        #expect(funnel.int("delivered") == 1 && funnel.int("received") == 1 && funnel.int("opened") == 0, "\(funnel)")
        #expect(f.serve.log.contains("GET /v1/notifications/{id} 200") && f.serve.log.contains("POST /api/notifications/{id}/events 200"), "\(f.serve.log)")
    }
}
