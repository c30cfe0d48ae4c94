import Foundation
import Testing

/// What an operator sees of Huawei and Amazon devices, with the real binary against both fakes, a
/// running dispatcher and `serve`: `validate --resolve`, `status` and `status --json`, the
/// metrics' `platform` label, webhooks' `device.unregistered`, and the dashboard's campaign list,
/// campaign page, devices, compose preview and System page. Each is parsed back.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct HMSADMOperatorTests {
    static let hookSecret = "hms-adm-hook-secret-0123"
    static let job = #"{"to_tag": "username:alice", "pns": ["hms", "adm"], "title": "Sale", "message": "50% off", "data": {"k": "v"}}"#

    @Test func huaweiAndAmazonDevicesInEveryOperatorView() throws {
        let receiverDir = TempDir("pushspool-hook-receiver")
        let receiver = try FakeServer("webhook", args: ["secret": Self.hookSecret], dir: receiverDir)
        let h = try PushCloudHarness(hmsArgs: [:], admArgs: [:], extraConfig: """
            , "metrics": {"textfile": "spool/pushspool.prom", "interval_seconds": 1},
            "webhooks": [{"url": "\(receiver.url)/hook", "secret": "\(Self.hookSecret)", "events": ["job.finished", "device.unregistered"]}],
            \(FrontDoorFiles.section(#", "operators_file": "operators.htpasswd""#))
            """)
        FrontDoorFiles.write(into: h.dir)
        // 5 Huawei phones (one named illegal in a partial answer), 4 Fire tablets (one gone, one
        // whose answer names its canonical id).
        try h.register((0..<4).map { ("h\($0)", "hms", "tok-\($0)") } + [("h-bad", "hms", "illegal-1")]
                       + ["ok-0", "ok-1", "gone-1", "old-1"].map { ("a-\($0)", "adm", $0) })

        // validate --resolve: the reach per platform and each platform's body, before anything is sent.
        h.dir.write("c.json", Self.job)
        let v = try h.cli(["validate", "--resolve", h.dir.path("c.json")])
        #expect(v.status == 0, "\(v.stderr)")
        let lines = v.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasSuffix(": hms via hms: 5 devices") }, "\(v.stdout)")
        #expect(lines.contains { $0.hasSuffix(": adm via adm: 4 devices") }, "\(v.stdout)")
        let bodies = lines.filter { $0.contains(":   {") }.map { String($0[$0.range(of: ":   ")!.upperBound...]) }
        let parsed = bodies.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(parsed.count == 2, "\(bodies)")
        #expect((parsed.first?["message"] as? [String: Any])?["token"] as? [String] == [], "HMS's body, its tokens not yet added")
        #expect((parsed.last?["data"] as? [String: String])?["title"] == "Sale", "ADM's body")

        let serve = try ServeProcess(config: h.configPath, cwd: h.dir.url, env: PushCloudHarness.environment)
        let run = try BackgroundRun(["run", "--config", h.configPath], cwd: h.dir.url, env: PushCloudHarness.environment)
        defer {
            run.terminate()
            run.waitUntilExit()
            _ = serve.stop()
        }
        try h.submit("c", Self.job)
        eventually("the campaign to end", timeout: 60, lastSeen: { run.tail() }) { h.results("c").last?["type"] as? String == "summary" }
        let d = h.deliveries("c")
        #expect(d.count == 9)
        #expect(d.filter { $0.value.str("status") == "unregistered" }.keys.sorted() == ["a-gone-1", "h-bad"], "\(d)")

        // status --json: each provider, its recent failed answers by Huawei's and Amazon's own words.
        let doc = eventually("both providers in status --json", timeout: 20, {
            (try? JSONSerialization.jsonObject(with: Data(h.cli(["status", "--json"]).stdout.utf8))) as? [String: Any] ?? [:]
        }, until: { doc in
            // Both, each with its failed answer (reported at the dispatcher's next heartbeat).
            let withErrors = (doc["providers"] as? [[String: Any]] ?? []).filter { !(($0["recent_errors"] as? [Any]) ?? []).isEmpty }
            return Set(withErrors.compactMap { $0["provider"] as? String }) == ["hms", "adm"]
        })
        let providers = Dictionary(((doc["providers"] as? [[String: Any]]) ?? []).map { ($0["provider"] as? String ?? "", $0) }) { a, _ in a }
        let hmsErrors = (providers["hms"]?["recent_errors"] as? [[String: Any]]) ?? []
        #expect(hmsErrors.contains { $0["code"] as? String == "80100000" && ($0["meaning"] as? String ?? "").hasPrefix("Huawei named this token illegal") },
                "\(hmsErrors)")
        let admErrors = (providers["adm"]?["recent_errors"] as? [[String: Any]]) ?? []
        #expect(admErrors.contains { $0["code"] as? String == "400" && $0["reason"] as? String == "Unregistered" }, "\(admErrors)")
        let text = try h.cli(["status"]).stdout
        #expect(text.contains("provider hms: ") && text.contains("1 failed answer, the last") && text.contains(": 80100000\n"), "\(text)")
        #expect(text.contains("provider adm: ") && text.contains("400 Unregistered"), "\(text)")
        #expect(!text.contains("illegal-1") && !text.contains("gone-1"), "no handle in status")
        // status ID, and its JSON: the job's counts.
        let job = try h.cli(["status", "c", "--json"])
        let entry = (try? JSONSerialization.jsonObject(with: Data(job.stdout.utf8))) as? [String: Any] ?? [:]
        #expect(entry["delivered"] as? Int == 7, "\(job.stdout)")
        #expect(try h.cli(["status", "c"]).stdout.hasPrefix("job c: done, 7 delivered"))

        // The metrics file: deliveries by platform and status, as the result log has them.
        let read = eventually("the metrics file to count the campaign", timeout: 20, {
            try? Exposition(h.dir.read("spool/pushspool.prom") ?? "")
        }, until: { $0?.sum("pushspool_deliveries_total") == 9 })
        let metrics = try #require(read)
        for (platform, delivered, unregistered) in [("hms", 4.0, 1.0), ("adm", 3.0, 1.0)] {
            #expect(metrics.sum("pushspool_deliveries_total", where: ["platform": platform, "provider": platform, "status": "delivered"]) == delivered, "\(platform)")
            #expect(metrics.sum("pushspool_deliveries_total", where: ["platform": platform, "provider": platform, "status": "unregistered"]) == unregistered, "\(platform)")
        }

        // Webhooks: one device.unregistered naming both devices with their platforms, no handle.
        eventually("the device.unregistered event", timeout: 30, lastSeen: { "\(receiver.state())" }) {
            !WebhookIntegrationTests.events(receiver, "device.unregistered").isEmpty
        }
        let gone = WebhookIntegrationTests.events(receiver, "device.unregistered").flatMap { $0.dict("data")?.list("devices") as? [[String: Any]] ?? [] }
        #expect(Set(gone.map { "\($0.str("device") ?? "?") \($0.str("platform") ?? "?")" }) == ["h-bad hms", "a-gone-1 adm"], "\(gone)")
        let received = String(decoding: (try? Data(contentsOf: receiver.stateFile)) ?? Data(), as: UTF8.self)
        #expect(!received.contains("illegal-1") && !received.contains("\"gone-1\""), "no handle in a webhook")

        // The dashboard.
        let c = try serve.client()
        let (cookie, csrf) = try DashboardDoorTests.login(c)
        let session = [("Cookie", cookie), ("X-CSRF-Token", csrf)]
        // The campaign list's Platforms column.
        var a = try c.request("GET", "/ui/api/jobs", headers: session)
        let listed = ((a.json as? [String: Any])?["jobs"] as? [[String: Any]] ?? []).first { $0["id"] as? String == "c" }
        #expect(listed?["platforms"] as? [String] == ["hms", "adm"], "\(a.text.prefix(500))")
        // The campaign page: its platforms and failures by reason, each with what it means.
        a = try c.request("GET", "/ui/api/jobs/c", headers: session)
        let page = try #require(a.json as? [String: Any], "\(a.text.prefix(300))")
        #expect((page["job"] as? [String: Any])?["platforms"] as? [String] == ["hms", "adm"])
        let failures = (page["failures"] as? [[String: Any]]) ?? []
        let byPlatform = Dictionary(failures.map { ($0["platform"] as? String ?? "", $0) }) { a, _ in a }
        #expect(byPlatform["hms"]?["code"] as? String == "80100000" && byPlatform["hms"]?["count"] as? Int == 1, "\(failures)")
        #expect((byPlatform["hms"]?["meaning"] as? String ?? "").hasPrefix("Huawei named this token illegal"), "\(failures)")
        #expect(byPlatform["adm"]?["reason"] as? String == "Unregistered" && (byPlatform["adm"]?["meaning"] as? String ?? "").contains("Fire device"), "\(failures)")
        // The devices page counts per platform (the two gone were pruned; old-1 is now new-1).
        a = try c.request("GET", "/ui/api/devices", headers: session)
        let counts = ((a.json as? [String: Any])?["platforms"] as? [[String: Any]]) ?? []
        let perPlatform = Dictionary(counts.map { ($0["name"] as? String ?? "?", $0["devices"] as? Int ?? -1) }) { a, _ in a }
        #expect(perPlatform == ["hms": 4, "adm": 3], "\(a.text.prefix(400))")
        // Compose: the checkboxes offer both, and the preview shows each one's reach and body.
        a = try c.request("GET", "/ui/assets/app.js", headers: session)
        #expect(a.text.contains(#"["apns", "fcm", "wns", "web", "hms", "adm"]"#))
        a = try c.request("POST", "/ui/api/preview", headers: session, body: Self.job)
        let preview = try #require(a.json as? [String: Any], "\(a.text.prefix(300))")
        let reach = (preview["reach"] as? [[String: Any]]) ?? []
        #expect(reach.map { "\($0["platform"]!)=\($0["devices"]!)" } == ["hms=4", "adm=3"], "\(reach)")
        #expect(((preview["payloads"] as? [[String: Any]]) ?? []).compactMap { $0["platform"] as? String } == ["hms", "adm"])
        // The tutorial's flow: bob registers a Huawei phone and a Fire tablet (Platform "hms",
        // "adm"), alice notifies him on each, and each service receives it.
        let bob = [("Authorization", FrontDoorFiles.basic("bob"))], alice = [("Authorization", FrontDoorFiles.basic("alice"))]
        for (platform, handle) in [("hms", "tok-bob"), ("adm", "bob-fire")] {
            let id = try #require(try c.request("POST", "/api/register?handle=\(handle)", headers: bob).json as? String)
            a = try c.request("PUT", "/api/register/\(id)", headers: bob, body: #"{"Platform": "\#(platform)", "Handle": "\#(handle)", "Tags": []}"#)
            #expect(a.status == 200, "\(platform): \(a.text)")
            a = try c.request("POST", "/api/notifications?pns=\(platform)&to_tag=bob", headers: alice, body: #""hi bob""#)
            #expect(a.status == 200, "\(platform): \(a.text)")
        }
        eventually("Huawei and Amazon to receive alice's notes", timeout: 60, lastSeen: { run.tail() }) {
            let sent = (h.hms?.state().list("sent") as? [[String: Any]]) ?? []
            let toBob = sent.first { ($0["tokens"] as? [String]) == ["tok-bob"] }?["data"] as? String
            let fire = h.adm?.state().dict("perDevice")?.dict("bob-fire")?.dict("data")
            return toBob?.contains("hi bob") == true && fire?.str("message")?.contains("hi bob") == true
        }

        // The System page: a card for each provider.
        let system = eventually("the System page to list both providers", timeout: 20, {
            (try? c.request("GET", "/ui/api/system", headers: session).json as? [String: Any]) ?? [:]
        }, until: { doc in
            Set(((doc["providers"] as? [[String: Any]]) ?? []).compactMap { $0["provider"] as? String }).isSuperset(of: ["hms", "adm"])
        })
        #expect(Set(((system["providers"] as? [[String: Any]]) ?? []).compactMap { $0["provider"] as? String }).isSuperset(of: ["hms", "adm"]))
    }
}
