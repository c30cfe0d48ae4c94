import Foundation
import Testing
@testable import PushspoolKit

/// The real binary (`pushspool run --once`) against the fake APNs. Each test asserts on both
/// sides: what the fake received and what the result log and the registry say.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct APNsIntegrationTests {
    /// Device id → (token prefix, expected status, expected attempts, expected reason).
    static let script: [(String, String, String, Int, String?)] = [
        ("ok1", "0000", "delivered", 1, nil),
        ("ok2", "0001", "delivered", 1, nil),
        ("gone", "410a", "unregistered", 1, "Unregistered"),
        ("back", "410b", "unregistered", 1, "Unregistered"),      // re-registered after Apple's timestamp
        ("expired", "410e", "unregistered", 1, "ExpiredToken"),
        ("bad", "400b", "unregistered", 1, "BadDeviceToken"),
        // Another app's token: an app-level refusal, the device kept (§ Several apps).
        ("other-app", "400d", "failed", 1, "DeviceTokenNotForTopic (app default, topic com.example.app)"),
        ("new-reason", "400e", "failed", 1, "NewAppleReason"),
        ("flaky503", "503f", "delivered", 2, nil),
        ("flaky500", "500f", "delivered", 2, nil),
        ("busy", "429f", "delivered", 2, nil),
        ("shutdown", "503c", "delivered", 2, nil),
        ("throttled", "429a", "failed", 3, "TooManyRequests"),
    ]

    @Test func everyScriptedAnswerEndsWhereTheContractSays() throws {
        let s = try APNsSpool()
        for (id, prefix, _, _, _) in Self.script { try s.register(id: id, handle: APNsSpool.token(prefix, 7)) }
        s.drop("j1", #"{"id":"j1","to_tag":"username:alice","pns":["apns"],"message":"hi","from":"bob"}"#)
        let run = try s.runOnce()
        #expect(run.status == 0, "\(run.stderr)")

        // The result log.
        let lines = s.deliveries("j1")
        #expect(lines.count == Self.script.count)
        for (id, _, status, attempts, reason) in Self.script {
            let line = lines[id]
            #expect(line?["status"] as? String == status, "\(id)")
            #expect(line?["attempts"] as? Int == attempts, "\(id)")
            #expect(line?["reason"] as? String == reason, "\(id)")
            #expect(line?["provider"] as? String == "apns")
        }
        #expect(lines["ok1"]?["code"] as? String == "200")
        #expect(lines["gone"]?["code"] as? String == "410")
        let summary = s.results("j1").last
        #expect(summary?["delivered"] as? Int == 6)
        #expect(summary?["unregistered"] as? Int == 4)
        #expect(summary?["failed"] as? Int == 3)

        // The registry: gone devices pruned, except the one that registered after Apple's timestamp.
        let remaining = try s.deviceIDs()
        #expect(remaining == ["ok1", "ok2", "back", "new-reason", "flaky503", "flaky500", "busy", "shutdown", "throttled", "other-app"])

        // The fake's side: one request per attempt, nothing delivered twice, one JWT, one connection.
        let state = waitForIdle(s.fake, answered: 19)
        let perToken = state["perToken"] as? [String: Int] ?? [:]
        for (id, prefix, _, attempts, _) in Self.script {
            #expect(perToken[APNsSpool.token(prefix, 7)] == attempts, "\(id)")
        }
        #expect(state["requests"] as? Int == 19)
        #expect(state["duplicateDeliveries"] as? Int == 0)
        #expect(state["jwts"] as? Int == 1)
        #expect(state["badJWTs"] as? Int == 0)
        #expect(state["tlsConnections"] as? Int == 2, "503 Shutdown moves later requests to a new connection")
        #expect((state["problems"] as? [Any])?.isEmpty == true)
        let headers = (state["lastHeaders"] as? [String: [String: Any]])?[APNsSpool.token("0000", 7)]
        #expect(headers?["pushType"] as? String == "alert")
        #expect(headers?["priority"] as? String == "10")
        #expect(headers?["topic"] as? String == "com.example.app")
        #expect(headers?["apnsId"] as? String == lines["ok1"]?["provider_id"] as? String)
        #expect(!run.stderr.contains("bearer"), "no credential in the log")
    }

    @Test func jobFieldsBecomeAPNsHeaders() throws {
        let s = try APNsSpool()
        try s.register(id: "a", handle: APNsSpool.token("0000", 1))
        try s.register(id: "b", handle: APNsSpool.token("0000", 2), tag: "quiet")
        let before = Int(Date().timeIntervalSince1970)
        s.drop("j2", #"{"id":"j2","to_tag":"username:alice","pns":"apns","message":"score","ttl_seconds":600,"collapse_id":"game-7","priority":"normal"}"#)
        s.drop("j3", #"{"id":"j3","to_tag":"quiet","pns":["apns"],"message":"x","payload":{"apns":{"aps":{"content-available":1}}}}"#)
        #expect(try s.runOnce().status == 0)
        let state = waitForIdle(s.fake, answered: 2)
        let all = state["lastHeaders"] as? [String: [String: Any]] ?? [:]
        let a = all[APNsSpool.token("0000", 1)]
        #expect(a?["priority"] as? String == "5")
        #expect(a?["collapseId"] as? String == "game-7")
        let expiration = Int(a?["expiration"] as? String ?? "") ?? 0
        #expect(expiration >= before + 600 && expiration <= before + 700)
        let b = all[APNsSpool.token("0000", 2)]
        #expect(b?["pushType"] as? String == "background")
        #expect(b?["priority"] as? String == "5")
        #expect(s.deliveries("j2")["a"]?["status"] as? String == "delivered")
        #expect(s.deliveries("j3")["b"]?["status"] as? String == "delivered")
    }

    @Test func keyErrorPausesTheProviderInsteadOfHammering() throws {
        let s = try APNsSpool(fakeArgs: ["auth-reason": "InvalidProviderToken"], concurrency: 4, maxAttempts: 6)
        try s.importDevices(40, tag: "all")
        s.drop("j4", #"{"id":"j4","to_tag":"all","pns":["apns"],"message":"hi"}"#)
        #expect(try s.runOnce().status == 0)
        let lines = s.deliveries("j4")
        #expect(lines.count == 40)
        #expect(lines.values.allSatisfy { $0["status"] as? String == "failed" && ($0["reason"] as? String ?? "").contains("InvalidProviderToken") })
        #expect(try s.deviceCount() == 40, "config errors never delete tokens")
        let state = waitForIdle(s.fake, answered: 1)
        // InvalidProviderToken is retried once with a fresh token (AUTH once), then the provider
        // pauses: at most the requests in flight (4) and their one retry each reach Apple.
        #expect((state["requests"] as? Int ?? 99) <= 8, "at most the requests already in flight reach Apple")
    }

    @Test func configurationProblemsAreReportedOnceWithExit78() throws {
        let s = try APNsSpool(apns: """
            {"team_id": "SHORT", "key_id": "KEY-WITH-DASH", "key_file": "missing.p8",
             "topic": "com.example.app", "environment": "sandbox", "endpoint": "http://plain.example"}
            """)
        s.drop("j5", #"{"id":"j5","to_tag":"x","pns":["apns"],"message":"hi"}"#)
        for command in [["run", "--once"], ["config", "--check"]] {
            let r = try s.cli(command + s.common)
            #expect(r.status == 78, "\(command)")
            for field in ["team_id", "key_id", "key_file", "endpoint"] {
                #expect(r.stderr.components(separatedBy: "providers.apns.\(field):").count == 2, "\(command) \(field) once")
            }
        }
        #expect(s.fake.state()["requests"] as? Int == 0)
    }

    @Test func keyFileReadableByOthersIsWarnedAboutButUsed() throws {
        let s = try APNsSpool()
        chmod(s.dir.path("AuthKey_TESTKEY123.p8"), 0o644)
        try s.register(id: "a", handle: APNsSpool.token("0000", 1))
        s.drop("j6", #"{"id":"j6","to_tag":"username:alice","pns":["apns"],"message":"hi"}"#)
        let r = try s.runOnce()
        #expect(r.status == 0)
        #expect(r.stderr.contains("AuthKey_TESTKEY123.p8 is readable by group or others"))
        #expect(s.deliveries("j6")["a"]?["status"] as? String == "delivered")

        chmod(s.dir.path("AuthKey_TESTKEY123.p8"), 0o600)
        s.drop("j7", #"{"id":"j7","to_tag":"username:alice","pns":["apns"],"message":"again"}"#)
        let quiet = try s.runOnce()
        #expect(!quiet.stderr.contains("readable by group or others"))
    }

    /// 10,000 notifications to a fake that misbehaves as `fakeArgs` say; every token delivered
    /// exactly once. Returns the fake's stats for the case's own checks.
    func tenThousand(_ fakeArgs: [String: String]) throws -> [String: Any] {
        let s = try APNsSpool(fakeArgs: fakeArgs.merging(["track-limit": "0"]) { a, _ in a }, concurrency: 256)
        try s.importDevices(10_000, tag: "all")
        s.drop("big", #"{"id":"big","to_tag":"all","pns":["apns"],"message":"hi"}"#)
        #expect(try s.runOnce().status == 0)
        let summary = s.results("big").last
        #expect(summary?["delivered"] as? Int == 10_000)
        #expect(summary?["failed"] as? Int == 0)
        let state = waitForIdle(s.fake, answered: 10_000)
        #expect(state["tokensDelivered"] as? Int == 10_000)
        #expect(state["duplicateDeliveries"] as? Int == 0)
        return state
    }

    /// A well-behaved service: one long-lived TLS connection and one JWT for all of them.
    @Test func tenThousandUseOneLongLivedConnection() throws {
        let state = try tenThousand([:])
        #expect(state["requests"] as? Int == 10_000)
        #expect(state["tlsConnections"] as? Int == 1)
        #expect(state["jwts"] as? Int == 1)
    }

    /// Every 50th stream refused (RST_STREAM REFUSED_STREAM, unprocessed): the transport sends
    /// those again by itself, on the same connection.
    @Test func tenThousandWithRefusedStreamsAreDeliveredExactlyOnce() throws {
        let state = try tenThousand(["refuse-every": "50"])
        #expect((state["refused"] as? Int ?? 0) >= 200)
        #expect(state["tlsConnections"] as? Int == 1)
    }

    /// GOAWAY after every 500th stream of a connection: streams past the GOAWAY's last-stream-id
    /// go again on a new connection, and no answered request is sent twice.
    @Test func tenThousandWithGoawayEvery500AreDeliveredExactlyOnce() throws {
        let state = try tenThousand(["goaway-every": "500"])
        #expect((state["goawaysSent"] as? Int ?? 0) >= 10)
        #expect(state["requests"] as? Int == 10_000, "every answered request answered once")
    }

    /// SIGTERM during an outage (every answer 503 with Retry-After: 120): the dispatcher exits 0
    /// within seconds. Retries waiting out the Retry-After are not waited for, no new target
    /// starts after the signal, nothing unsent is logged as final, and the job stays in active/.
    /// Once the service is back, the next run notifies every device exactly once.
    @Test func sigtermDuringAnOutageStopsAtOnce() throws {
        let outage = TempDir("pushspool-outage")
        outage.write("down", "")
        let s = try APNsSpool(fakeArgs: ["retry-after": "120", "outage-file": outage.path("down")],
                              concurrency: 2, maxAttempts: 6, maxDelayMs: 300_000)
        for i in 0..<6 { try s.register(id: "d\(i)", handle: APNsSpool.token("0000", i)) }
        s.drop("outage", #"{"id":"outage","to_tag":"username:alice","pns":["apns"],"message":"hi"}"#)
        let err = Pipe()
        let p = try startPushspool(["run"] + s.common, stderr: err)
        eventually("two requests at the fake", timeout: 20) { (s.fake.state()["requests"] as? Int ?? 0) >= 2 }
        // Both answered 503 with Retry-After: the two slots wait it out, so no third request comes.
        eventually("both requests answered", timeout: 20) { (s.fake.state()["answered"] as? Int ?? 0) >= 2 }
        let before = s.fake.state()["requests"] as? Int ?? 0
        #expect(before == 2, "two targets in flight (concurrency 2), both waiting out Retry-After")
        let signalled = Date()
        p.terminate()
        p.waitUntilExit()
        #expect(Date().timeIntervalSince(signalled) < 10, "stopped \(Date().timeIntervalSince(signalled)) s after SIGTERM")
        #expect(p.terminationStatus == 0)
        #expect(s.dir.list("spool/active") == ["outage.json"])
        #expect(s.deliveries("outage").isEmpty, "nothing unsent logged as final")
        #expect(s.fake.state()["requests"] as? Int == before, "no new target after the signal")
        // The operator reads the stop begin and end, and what is left to resume.
        let stderr = String(decoding: readToEnd(err.fileHandleForReading.fileDescriptor), as: UTF8.self)
        #expect(stderr.contains("pushspool: info: SIGTERM: stopping: no new job is taken"), "\(stderr)")
        #expect(stderr.hasSuffix("pushspool: info: stopped: 1 unfinished job stays in active/ and resumes where its result log ends\n"), "\(stderr)")

        try FileManager.default.removeItem(atPath: outage.path("down"))
        let resumed = try s.runOnce()
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(s.dir.list("spool/done") == ["outage.json"])
        let lines = s.results("outage").filter { $0["type"] as? String == "delivery" }
        #expect(lines.count == 6, "one final line per device")
        #expect(Set(lines.compactMap { $0["device"] as? String }).count == 6)
        let state = waitForIdle(s.fake, answered: 8)
        #expect(state["tokensDelivered"] as? Int == 6)
        #expect(state["duplicateDeliveries"] as? Int == 0)
    }

    /// The first SIGTERM waits for requests in flight (here held 4 s by the service); a second
    /// one ends the process at once, exit 0, and the resumed job notifies each device, resending
    /// at most what was in flight.
    @Test func aSecondSignalStopsAtOnceAndSafely() throws {
        let s = try APNsSpool(fakeArgs: ["hold-ms": "4000"], concurrency: 16)
        for i in 0..<16 { try s.register(id: "d\(i)", handle: APNsSpool.token("0000", i)) }
        s.drop("held", #"{"id":"held","to_tag":"username:alice","pns":["apns"],"message":"hi"}"#)
        let p = try startPushspool(["run"] + s.common)
        eventually("16 arrivals at the fake", timeout: 20) { CampaignControlTests.arrivals(s.fake.state()).perSecond.reduce(0, +) == 16 }
        p.terminate()
        usleep(500_000)
        #expect(p.isRunning, "the first signal waits for the requests in flight")
        let second = Date()
        p.terminate()
        p.waitUntilExit()
        #expect(Date().timeIntervalSince(second) < 1, "stopped \(Date().timeIntervalSince(second)) s after the second signal")
        #expect(p.terminationStatus == 0)
        #expect(s.dir.list("spool/active") == ["held.json"])

        let resumed = try s.runOnce()
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(s.deliveries("held").count == 16)
        let state = waitForIdle(s.fake, answered: 16)
        #expect(state["tokensDelivered"] as? Int == 16)
        #expect((state["duplicateDeliveries"] as? Int ?? 99) <= 16)
    }
}
