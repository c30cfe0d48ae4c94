import Foundation
import PushspoolCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The real binary against the fake Push Kit (token endpoint + messages:send), which verifies the
/// grant, the bearer, the body's shape, its 4,096 bytes without tokens and 1 to 1,000 tokens.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct HMSIntegrationTests {
    static func register(_ h: PushCloudHarness, count: Int, illegal: Set<Int> = []) throws {
        try h.register((0..<count).map { i in ("h\(i)", "hms", illegal.contains(i) ? "illegal-\(i)" : "tok-\(i)") })
    }

    /// 3,000 devices, 7 of them named illegal in partial answers: exactly those 7 are
    /// unregistered, the other 2,993 delivered once each, and no request carries a token twice.
    @Test func partialAnswerFailsExactlyTheNamedTokens() throws {
        let h = try PushCloudHarness(hmsArgs: [:], concurrency: 1000)
        let illegal: Set<Int> = [3, 400, 999, 1000, 1777, 2500, 2999]
        try Self.register(h, count: 3000, illegal: illegal)
        let d = try h.runOnce("c", #"{"to_tag": "username:alice", "pns": ["hms"], "title": "Sale", "message": "50% off", "data": {"k": "v"}, "priority": "high", "ttl_seconds": 600}"#)
        #expect(d.count == 3000)
        let gone = Set(d.filter { $0.value.str("status") == "unregistered" }.keys)
        #expect(gone == Set(illegal.map { "h\($0)" }))
        #expect(d.values.filter { $0.str("status") == "delivered" }.count == 2993)
        #expect(d["h3"]?.str("code") == "80100000")
        #expect(try h.registeredIDs().count == 2993)

        let s = try #require(h.hms).syncedState()
        #expect((s.list("problems") ?? ["?"]).isEmpty, "\(s["problems"] ?? "")")
        #expect(s.int("delivered") == 2993)
        #expect(s.int("duplicateDeliveries") == 0)
        #expect(s.int("duplicateInRequest") == 0)
        #expect(s.int("tokenRequests") == 1)
        let perSend = (s.list("tokensPerSend") as? [Int]) ?? []
        #expect(perSend.reduce(0, +) == 3000, "a token sent twice or not at all: \(perSend)")
        #expect(perSend.allSatisfy { $0 >= 1 && $0 <= 1000 })
        #expect(perSend.count < 300, "tokens were not batched: \(perSend.count) requests")
        let message = try #require(s.dict("lastMessage"))
        #expect(message.dict("notification")?.str("title") == "Sale")
        #expect(message.dict("android")?.str("urgency") == "HIGH")
        #expect(message.dict("android")?.str("ttl") == "600s")
        #expect(message.str("data")?.contains(#""k":"v""#) == true)
        #expect(!h.visibleText([]).contains("hms-secret"))
        #expect(!h.visibleText([]).contains("hms.fake-"))
    }

    /// At the default concurrency (256), a campaign to 3,000 devices goes out in 3 requests of
    /// 1,000: a batch takes one slot of the worker pool, not one per device.
    @Test func fullBatchesAtTheDefaultConcurrency() throws {
        let h = try PushCloudHarness(hmsArgs: [:], concurrency: Config().concurrency)
        try Self.register(h, count: 3000)
        let d = try h.runOnce("c", #"{"to_tag": "username:alice", "pns": ["hms"], "message": "m"}"#)
        #expect(d.count == 3000 && d.values.allSatisfy { $0.str("status") == "delivered" })
        let s = try #require(h.hms).syncedState()
        #expect((s.list("tokensPerSend") as? [Int]) == [1000, 1000, 1000])
        #expect(s.int("duplicateDeliveries") == 0 && s.int("duplicateInRequest") == 0)
    }

    /// Push Kit's other answers through the binary, the fake answering every send with one code:
    /// what each device ends as, how many attempts it took, whether it stays registered, and
    /// whether the provider paused (never deleting a device for a configuration error).
    @Test(arguments: [
        ("80100003", "400", "failed", 1, true, false),      // message structure: no retry
        ("80300007", "200", "unregistered", 1, false, false), // every token invalid
        ("81000001", "500", "failed", 4, true, false),      // internal error: retried up to max_attempts
        ("80300002", "403", "failed", 1, true, true),       // no permission: the provider pauses
        ("80600003", "200", "failed", 2, true, true),       // OAuth check failed: refreshed once, then paused
    ])
    func eachCodeEndsItsDevicesAsHuaweiMeansIt(code: String, http: String, status: String, attempts: Int, kept: Bool, paused: Bool) throws {
        let h = try PushCloudHarness(hmsArgs: ["code": code, "http-status": http])
        try Self.register(h, count: 5)
        let d = try h.runOnce("c", #"{"to_tag": "username:alice", "pns": ["hms"], "message": "m"}"#)
        #expect(d.count == 5 && d.values.allSatisfy { $0.str("status") == status && $0.str("code") == code }, "\(code): \(d.values.first ?? [:])")
        #expect(d.values.allSatisfy { $0.int("attempts") == attempts }, "\(code): \(d.values.map { $0.int("attempts") ?? -1 })")
        #expect(try h.registeredIDs().count == (kept ? 5 : 0), "\(code)")
        let status = try h.cli(["status", "--json"])
        let pauses = ((try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8))) as? [String: Any])?["paused_providers"] as? [[String: Any]] ?? []
        #expect(pauses.compactMap { $0["provider"] as? String } == (paused ? ["hms"] : []), "\(code): \(pauses)")
    }

    /// The other spelling of the list (`illegalTokens`), which some of Huawei's documents show.
    @Test func partialAnswerWithTheOtherSpellingToo() throws {
        let h = try PushCloudHarness(hmsArgs: ["spelling": "illegalTokens"])
        try Self.register(h, count: 20, illegal: [5])
        let d = try h.runOnce("c", #"{"to_tag": "username:alice", "pns": ["hms"], "message": "m"}"#)
        #expect(d["h5"]?.str("status") == "unregistered")
        #expect(d.values.filter { $0.str("status") == "delivered" }.count == 19)
    }

    /// An expired access token (80200003) is refreshed once, and the tokens it refused go again.
    @Test func expiredTokenIsRefreshedOnce() throws {
        let h = try PushCloudHarness(hmsArgs: ["expire-first-token": "true"])
        try Self.register(h, count: 50)
        let d = try h.runOnce("c", #"{"to_tag": "username:alice", "pns": ["hms"], "message": "m"}"#)
        #expect(d.values.allSatisfy { $0.str("status") == "delivered" })
        let s = try #require(h.hms).syncedState()
        #expect(s.int("tokenRequests") == 2)
        #expect(s.int("delivered") == 50)
        #expect(s.int("duplicateDeliveries") == 0)
    }

    /// A body over 4,096 bytes without its tokens never leaves: the job fails with size and limit.
    @Test func oversizedMessageIsRefusedBeforeAnyRequest() throws {
        let h = try PushCloudHarness(hmsArgs: [:])
        try Self.register(h, count: 2)
        let text = String(repeating: "x", count: 5000)
        try h.submit("big", #"{"to_tag": "username:alice", "pns": ["hms"], "message": "\#(text)"}"#)
        let run = try h.runOnce()
        #expect(run.stdout.contains("without its tokens (limit 4096)") || run.stderr.contains("without its tokens (limit 4096)"), "\(run.stdout)\(run.stderr)")
        #expect(try #require(h.hms).syncedState().int("sends") == 0)
    }

    /// kill -9 in the middle of a campaign, then resume: every device ends with one line, and
    /// only tokens of requests in flight at the kill can reach the service twice. A request
    /// takes one slot: with one slot, one request of at most 1,000 tokens is in flight.
    @Test func killDashNineThenResumeResendsNoTokenOfACompletedRequest() throws {
        let concurrency = 1
        let h = try PushCloudHarness(hmsArgs: ["delay-ms": "300"], concurrency: concurrency)
        let count = 4000
        try Self.register(h, count: count)
        try h.submit("campaign", #"{"to_tag": "username:alice", "pns": ["hms"], "message": "m"}"#)
        let p = try startPushspool(["run", "--once", "--config", h.configPath], cwd: h.dir.url, env: ["TEST_HMS_SECRET": "hms-secret"])
        eventually("1000 deliveries logged", timeout: 60, lastSeen: { "\(h.deliveries("campaign").count) logged" }) { h.deliveries("campaign").count >= 1000 }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        let logged = h.deliveries("campaign").count
        #expect(logged >= 1000 && logged < count, "killed after \(logged)")

        let resume = try h.runOnce()
        #expect(resume.status == 0, "\(resume.stderr)")
        #expect(h.dir.list("spool/done") == ["campaign.json"])
        #expect(h.results("campaign").filter { $0["type"] as? String == "delivery" }.count == count, "a device was logged twice")
        #expect(h.deliveries("campaign").values.allSatisfy { $0.str("status") == "delivered" })
        let s = try #require(h.hms).syncedState()
        let twice = s.int("duplicateDeliveries") ?? -1
        // A line is written before its slot is released: only tokens in flight (≤ concurrency
        // requests of 1,000) again.
        #expect(twice >= 0 && twice <= concurrency * 1000, "\(twice) tokens delivered twice")
        #expect(s.int("duplicateInRequest") == 0)
        #expect(s.int("tokenRequests") == 1, "the resumed process sent with the token the killed one cached")
    }
}

/// A tracked job to Huawei and Amazon devices: each push carries its own `notification_id` beside
/// the text, so no two HMS devices share a request.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct HMSADMTrackingTests {
    @Test func trackedPushesCarryEachDevicesID() throws {
        let h = try PushCloudHarness(hmsArgs: [:], admArgs: [:])
        try h.register((0..<3).map { ("h\($0)", "hms", "tok-\($0)") } + (0..<3).map { ("a\($0)", "adm", "ok-\($0)") })
        let d = try h.runOnce("t", #"{"to_tag": "username:alice", "pns": ["hms", "adm"], "message": "hello", "track": true}"#)
        #expect(d.count == 6 && d.values.allSatisfy { $0.str("status") == "delivered" })
        var ids: Set<String> = []
        let sent = (try #require(h.hms).syncedState().list("sent") as? [[String: Any]]) ?? []
        #expect(sent.count == 3 && sent.allSatisfy { ($0["tokens"] as? [String])?.count == 1 }, "\(sent)")
        for s in sent {
            let data = try JSONSerialization.jsonObject(with: Data((s["data"] as? String ?? "").utf8)) as? [String: String]
            #expect(data?["message"] == "hello")
            if let id = data?["notification_id"] { ids.insert(id) }
        }
        let adm = try #require(h.adm).state()
        for i in 0..<3 {
            let data = adm.dict("perDevice")?.dict("ok-\(i)")?.dict("data") as? [String: String]
            #expect(data?["message"] == "hello")
            if let id = data?["notification_id"] { ids.insert(id) }
        }
        #expect(ids.count == 6, "\(ids)")
    }
}

/// Languages and frequency caps for Huawei and Amazon devices through the fakes: each device
/// gets its language's text (an HMS request carries one language's tokens only), and a capped
/// job sent twice reaches each device once, the second time `capped` without a request.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct HMSADMLanguagesAndCapsTests {
    @Test func eachDeviceGetsItsLanguageAndACapHoldsOnBothServices() throws {
        let h = try PushCloudHarness(hmsArgs: [:], admArgs: [:], extraConfig: #", "apps": {"shop": {"frequency_cap": {"max": 1, "per_hours": 24}}}, "default_app": "shop""#)
        var lines: [String] = []
        for i in 0..<40 { lines.append(#"{"id": "h\#(i)", "platform": "hms", "handle": "tok-\#(i)", "tags": ["all"]\#(i % 2 == 0 ? #", "lang": "de""# : "")}"#) }
        for i in 0..<4 { lines.append(#"{"id": "a\#(i)", "platform": "adm", "handle": "ok-\#(i)", "tags": ["all"]\#(i % 2 == 0 ? #", "lang": "de""# : "")}"#) }
        h.dir.write("devices.jsonl", lines.joined(separator: "\n") + "\n")
        let imported = try h.cli(["import", h.dir.path("devices.jsonl")])
        try #require(imported.status == 0, "\(imported.stderr)")
        let job = #"{"to_tag": "all", "pns": ["hms", "adm"], "message": "hello", "localized": {"de": {"message": "hallo"}}, "capped": true}"#

        let first = try h.runOnce("first", job)
        #expect(first.count == 44 && first.values.allSatisfy { $0.str("status") == "delivered" }, "\(first.values.map { $0.str("status") ?? "?" })")
        let sent = (try #require(h.hms).syncedState().list("sent") as? [[String: Any]]) ?? []
        var reached: [String: String] = [:]
        for s in sent {
            let text = (try? JSONSerialization.jsonObject(with: Data((s["data"] as? String ?? "").utf8)) as? [String: String])?["message"] ?? "?"
            let tokens = (s["tokens"] as? [String]) ?? []
            let german = Set(tokens.map { (Int($0.dropFirst(4)) ?? 1) % 2 == 0 })
            #expect(german.count == 1, "one request, two languages: \(tokens)")
            for t in tokens { reached[t] = text }
        }
        #expect(reached.count == 40 && reached.allSatisfy { $0.value == ((Int($0.key.dropFirst(4)) ?? 1) % 2 == 0 ? "hallo" : "hello") }, "\(reached)")
        let adm = try #require(h.adm).state()
        for i in 0..<4 {
            #expect(adm.dict("perDevice")?.dict("ok-\(i)")?.dict("data")?.str("message") == (i % 2 == 0 ? "hallo" : "hello"))
        }

        let second = try h.runOnce("second", job)
        #expect(second.count == 44 && second.values.allSatisfy { $0.str("status") == "capped" }, "\(second.values.map { $0.str("status") ?? "?" })")
        #expect(try #require(h.hms).syncedState().int("delivered") == 40)
        #expect(((try #require(h.adm).state().dict("perDevice") ?? [:]).values.compactMap { ($0 as? [String: Any])?.int("attempts") }) == [1, 1, 1, 1])
    }
}

/// A secure job to Huawei and Amazon devices: each push is a data message carrying only its own
/// `secureId` (so no two HMS devices share a request), and no text of the job reaches either service.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct HMSADMSecurePushTests {
    @Test func securePushCarriesOnlyEachDevicesID() throws {
        let h = try PushCloudHarness(hmsArgs: [:], admArgs: [:])
        try h.register((0..<3).map { ("h\($0)", "hms", "tok-\($0)") } + (0..<3).map { ("a\($0)", "adm", "ok-\($0)") })
        let d = try h.runOnce("s", #"{"to_tag": "username:alice", "pns": ["hms", "adm"], "title": "Bank", "message": "balance is 12 EUR", "secure": true}"#)
        #expect(d.count == 6 && d.values.allSatisfy { $0.str("status") == "delivered" })

        let hms = try #require(h.hms).syncedState()
        let sent = (hms.list("sent") as? [[String: Any]]) ?? []
        #expect(sent.count == 3 && sent.allSatisfy { ($0["tokens"] as? [String])?.count == 1 })
        var ids: Set<String> = []
        for s in sent {
            let data = try JSONSerialization.jsonObject(with: Data((s["data"] as? String ?? "").utf8)) as? [String: String]
            #expect(data?.count == 1)
            if let id = data?["secureId"] { ids.insert(id) }
        }
        let adm = try #require(h.adm).state()
        for i in 0..<3 {
            let data = adm.dict("perDevice")?.dict("ok-\(i)")?.dict("data") as? [String: String]
            #expect(data?.count == 1)
            if let id = data?["secureId"] { ids.insert(id) }
        }
        #expect(ids.count == 6 && ids.allSatisfy { $0.utf8.count == 46 })
        let states = String(decoding: try JSONSerialization.data(withJSONObject: [hms, adm]), as: UTF8.self)
        #expect(!states.contains("balance") && !states.contains("Bank"))
    }
}
