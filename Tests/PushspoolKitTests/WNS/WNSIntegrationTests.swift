import Foundation
import Testing
@testable import PushspoolKit
import PushspoolCore

/// The real binary against the fake WNS (client-credentials token endpoint + channels), which
/// verifies the bearer token, X-WNS-Type, Content-Type/Length, sizes and well-formed toast XML.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct WNSIntegrationTests {
    static func channel(_ fake: FakeServer?, _ name: String) -> String {
        "\(fake?.url ?? "https://127.0.0.1:1")/ch/\(name)?token=AwYAAAD%2Bx"
    }

    @Test func perChannelOutcomesResultLogAndRegistry() throws {
        let h = try PushCloudHarness(wnsArgs: [:])
        let names = ["ok-1", "gone-1", "missing-1", "throttle-1", "flaky-1", "dropped-1"]
        try h.register(names.map { ("w-\($0)", "wns", Self.channel(h.wns, $0)) })
        try h.submit("toast", #"{"to_tag": "username:alice", "pns": ["wns"], "from": "bob", "message": "fish & <chips>", "ttl_seconds": 120}"#)
        let run = try h.runOnce()
        #expect(run.status == 0, "\(run.stderr)")

        let d = h.deliveries("toast")
        let expected = ["ok-1": "delivered", "throttle-1": "delivered", "flaky-1": "delivered", "dropped-1": "delivered",
                        "gone-1": "unregistered", "missing-1": "unregistered"]
        for (name, status) in expected { #expect(d["w-\(name)"]?.str("status") == status, "\(name)") }
        #expect(d["w-ok-1"]?.str("provider_id")?.hasPrefix("M") == true)
        #expect(d["w-dropped-1"]?.str("reason") == "dropped")
        #expect(d["w-gone-1"]?.str("code") == "410")
        #expect(d["w-throttle-1"]?.int("attempts") == 2)
        #expect(try h.registeredIDs() == ["w-ok-1", "w-throttle-1", "w-flaky-1", "w-dropped-1"])

        let s = try #require(h.wns).state()
        #expect(s.int("tokenRequests") == 1)
        #expect(s.int("badGrants") == 0)
        #expect((s.list("problems") ?? ["?"]).isEmpty, "\(s["problems"] ?? "")")
        #expect(s.int("duplicateDeliveries") == 0)
        let ok = try #require(s.dict("perChannel")?.dict("ok-1"))
        #expect(ok.int("attempts") == 1)
        #expect(ok.str("type") == "wns/toast")
        #expect(ok.str("template") == "ToastText01")
        #expect(ok.str("ttl") == "120")
        #expect(ok.list("texts") as? [String] == ["From bob: fish & <chips>"])
        // 406 carried X-WNS-CONTINUE-AFTER: 1; the second attempt waited for it.
        let times = (s.dict("perChannel")?.dict("throttle-1")?.list("times") as? [Double]) ?? []
        #expect(times.count == 2)
        #expect((times.last ?? 0) - (times.first ?? 0) >= 0.9)
        #expect(!h.visibleText([run]).contains(PushCloudHarness.clientSecret))
        #expect(!h.visibleText([run]).contains("wns.fake-"))
    }

    /// A dispatcher left idle after a send (WNS goes over libcurl) sleeps in curl_multi_poll
    /// until libcurl's next timer or a request: the curl thread woke every second.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/strace")))
    func anIdleCurlThreadSleeps() throws {
        let h = try PushCloudHarness(wnsArgs: [:])
        try h.register([("c-1", "wns", Self.channel(h.wns, "ok-1"))])
        let polls = try pollCallsWhenIdle(["run", "--config", h.configPath], cwd: h.dir.url, env: PushCloudHarness.environment) {
            try h.submit("j1", #"{"to_tag": "username:alice", "pns": ["wns"], "message": "m"}"#)
            eventually("j1 done", timeout: 30) { FileManager.default.fileExists(atPath: h.dir.path("spool/done/j1.json")) }
            #expect(h.summary("j1")?.int("delivered") == 1)
        }
        #expect(polls.isEmpty, "\(polls.count) poll calls in 3 s idle:\n\(polls.prefix(8).joined(separator: "\n"))")
    }

    @Test func channelOutsideAllowedHostsIsNeverContacted() throws {
        let h = try PushCloudHarness(wnsArgs: [:])
        let evil = try FakeServer("wns", args: [:], dir: h.dir)
        try h.register([("w-good", "wns", Self.channel(h.wns, "ok-1")),
                        ("w-evil", "wns", "https://localhost:\(evil.port)/ch/ok-1?token=x")])
        // Registration refuses a plain-http channel now; one already in the registry (written
        // before that check existed) is still refused at send time.
        let registry = try SQLiteRegistry(path: h.dir.path("spool/registry.sqlite"))
        try registry.upsert(Registration(id: "w-plain", platform: .wns, handle: "http://127.0.0.1:\(evil.port)/ch/ok-2?token=x",
                                         tags: ["username:alice"]))
        registry.close()

        let d = try h.runOnce("mixed", #"{"to_tag": "username:alice", "pns": "wns", "message": "hi"}"#)
        #expect(d["w-good"]?.str("status") == "delivered")
        #expect(d["w-evil"]?.str("status") == "failed")
        #expect(d["w-evil"]?.str("code") == "host-not-allowed")
        #expect(d["w-evil"]?.str("reason") == "channel host localhost is not in allowed_hosts")
        #expect(d["w-plain"]?.str("code") == "host-not-allowed")
        #expect(d["w-plain"]?.str("reason") == "channel URI is not https")
        // Refused, not unregistered: the registry keeps them for the operator to look at.
        #expect(try h.registeredIDs() == ["w-good", "w-evil", "w-plain"])
        let seen = evil.state()
        #expect(seen.int("posts") == 0)
        #expect(seen.int("tokenRequests") == 0)
        #expect((seen.dict("byStatus") ?? ["?": 0]).isEmpty)
        #expect(try #require(h.wns).state().int("posts") == 1)
    }

    @Test func expiredAccessTokenIsRefreshedOnceForAllChannels() throws {
        let h = try PushCloudHarness(wnsArgs: ["expire-first-token": "1"])
        try h.register((0..<20).map { ("w-\($0)", "wns", Self.channel(h.wns, "ok-\($0)")) })
        try h.runOnce("refresh", #"{"to_tag": "username:alice", "pns": "wns", "message": "hi"}"#)
        #expect(h.summary("refresh")?.int("delivered") == 20)
        let s = try #require(h.wns).state()
        #expect(s.int("tokenRequests") == 2)
        #expect(s.int("delivered") == 20)
        #expect(s.int("duplicateDeliveries") == 0)
    }

    /// WNS 403 ("your app does not own this channel") is about one channel unless it keeps coming:
    /// one foreign channel fails alone and is kept; a run of them pauses the provider.
    @Test func forbiddenChannelFailsAloneAndKeepsDevices() throws {
        let h = try PushCloudHarness(wnsArgs: [:])
        let ok = (0..<20).map { ("w-ok\($0)", "wns", Self.channel(h.wns, "ok-\($0)")) }
        try h.register([("w-f", "wns", Self.channel(h.wns, "forbidden-1"))] + ok)
        try h.submit("forbidden", #"{"to_tag": "username:alice", "pns": "wns", "message": "hi"}"#)
        _ = try h.runOnce()
        let d = h.deliveries("forbidden")
        #expect(d["w-f"]?.str("status") == "failed")
        #expect(d["w-f"]?.str("code") == "403")
        #expect(d.values.filter { $0.str("status") == "delivered" }.count == 20, "the other channels are not paused")
        #expect(try h.registeredIDs().count == 21)
    }

    @Test func manyForbiddenChannelsInARowPauseTheProvider() throws {
        let h = try PushCloudHarness(wnsArgs: [:])
        try h.register((0..<40).map { ("w-f\($0)", "wns", Self.channel(h.wns, "forbidden-\($0)")) })
        h.dir.write("pushspool.json", (h.dir.read("pushspool.json") ?? "").replacingOccurrences(of: #""concurrency": 256"#, with: #""concurrency": 2"#))
        try h.submit("forbidden", #"{"to_tag": "username:alice", "pns": "wns", "message": "hi"}"#)
        _ = try h.runOnce()
        let d = h.deliveries("forbidden")
        #expect(d.count == 40)
        #expect(d.values.allSatisfy { $0.str("status") == "failed" })
        #expect(d.values.filter { $0.str("code") == "paused" }.count >= 30, "paused after 5 refusals in a row")
        #expect((try #require(h.wns).state().int("posts") ?? 99) <= 8)
        #expect(try h.registeredIDs().count == 40)
    }

    @Test func rawAndTilePayloadsGoWithTheirOwnTypeAndContentType() throws {
        let h = try PushCloudHarness(wnsArgs: [:])
        try h.register([("w-1", "wns", Self.channel(h.wns, "ok-1"))])
        try h.submit("tile", #"{"to_tag": "username:alice", "pns": "wns", "message": "hi", "payload": {"wns": "<tile><visual><binding template=\"TileSmall\"><text>3 new</text></binding></visual></tile>"}}"#)
        try h.runOnce("raw", #"{"to_tag": "username:alice", "pns": "wns", "message": "hi", "payload": {"wns": "sync:42"}}"#)
        #expect(h.deliveries("tile")["w-1"]?.str("status") == "delivered")
        #expect(h.deliveries("raw")["w-1"]?.str("status") == "delivered")
        let s = try #require(h.wns).state()
        #expect((s.list("problems") ?? ["?"]).isEmpty, "\(s["problems"] ?? "")")
        #expect(s.int("delivered") == 2)
        // The fake checked each body against its X-WNS-Type and Content-Type; the last one was raw.
        #expect(s.dict("perChannel")?.dict("ok-1")?.int("attempts") == 2)
    }

    @Test func configCheckRedactsTheClientSecret() throws {
        let h = try PushCloudHarness(wnsArgs: [:])
        let r = try h.cli(["config", "--check"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("***"))
        #expect(!(r.stdout + r.stderr).contains(PushCloudHarness.clientSecret))
    }

    /// `status` while a campaign runs: "running" (its dispatcher is alive) with the progress from
    /// the checkpoint the job keeps, text and JSON alike; the checkpoint is gone once it is done.
    @Test func statusShowsARunningCampaignAndItsProgress() throws {
        let h = try PushCloudHarness(wnsArgs: ["delay-ms": "700"])
        // WNS is HTTP/1.1 with 8 connections: 100 channels answering after 700 ms take ~9 s.
        try h.register((0..<100).map { ("w\($0)", "wns", Self.channel(h.wns, "ok-\($0)")) })
        try h.submit("slow", #"{"to_tag": "username:alice", "pns": "wns", "message": "hi"}"#)
        let p = try startPushspool(["run", "--once", "--config", h.configPath], cwd: h.dir.url, env: ["TEST_WNS_SECRET": PushCloudHarness.clientSecret])
        func finished(_ r: RunResult) -> Int {
            let doc = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
            return ((doc?["active"] as? [[String: Any]])?.first?["finished"] as? Int) ?? 0
        }
        let json = try eventually("status to show the campaign's first targets final", timeout: 30, poll: 0.05,
                                  { try h.cli(["status", "--json"]) }, until: { finished($0) > 0 })
        let text = try h.cli(["status"])
        p.waitUntilExit()
        #expect(text.stdout.contains("running slow: "), "\(text.stdout)")
        #expect(text.stdout.contains("/100 targets final"))
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let active = try #require((doc["active"] as? [[String: Any]])?.first)
        #expect(active["running"] as? Bool == true)
        #expect(active["targets"] as? Int == 100)
        let finished = try #require(active["finished"] as? Int)
        #expect(finished > 0 && finished < 100, "mid-campaign: \(finished)")
        #expect(p.terminationStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: h.dir.path("spool/results/.slow.progress")))
        #expect(h.dir.list("spool/done") == ["slow.json"])
    }
}
