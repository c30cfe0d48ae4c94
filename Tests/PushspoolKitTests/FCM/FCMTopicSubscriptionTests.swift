import Foundation
import Testing
@testable import PushspoolKit
import PushspoolCore

/// `pushspool fcm topics subscribe|unsubscribe` against the fake FCM's Instance ID batch API,
/// counted from the fake's log: 1,000 tokens per request, per-token errors reported, gone tokens
/// pruned, the retry policy on 503 and INTERNAL, and a topic FCM refuses stopped before any request.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct FCMTopicSubscriptionTests {
    /// `count` FCM devices tagged `fans` (`gone`: handles the fake answers NOT_FOUND, `invalid`:
    /// INVALID_ARGUMENT), 7 FCM devices tagged otherwise and one APNs fan, none of which it reaches.
    func register(_ h: PushCloudHarness, count: Int, gone: Set<Int> = [], invalid: Set<Int> = [], transient: Set<Int> = []) throws {
        var lines = (0..<count).map { i in
            let prefix = gone.contains(i) ? "gone" : invalid.contains(i) ? "invalid" : transient.contains(i) ? "internal" : "tok"
            return #"{"id": "d\#(i)", "platform": "fcm", "handle": "\#(prefix)-\#(i)", "tags": ["fans"]}"#
        }
        lines += (0..<7).map { #"{"id": "o\#($0)", "platform": "fcm", "handle": "other-\#($0)", "tags": ["others"]}"# }
        lines.append(#"{"id": "a0", "platform": "apns", "handle": "\#(String(repeating: "ab", count: 32))", "tags": ["fans"]}"#)
        h.dir.write("devices.jsonl", lines.joined(separator: "\n") + "\n")
        let r = try h.cli(["import", h.dir.path("devices.jsonl")])
        try #require(r.status == 0, "\(r.stderr)")
    }

    @Test func subscribe2500TokensIsThreeRequestsWithPerTokenErrorsThenUnsubscribe() throws {
        let h = try PushCloudHarness(fcmArgs: [:])
        let fake = try #require(h.fcm)
        try register(h, count: 2500, gone: [5, 1500, 2499], invalid: [10, 2000])
        let sub = try h.cli(["fcm", "topics", "subscribe", "--topic", "scores", "--tags", "fans"])
        #expect(sub.status == 0, "\(sub.stderr)")
        var s = fake.state()
        #expect((s.list("problems") ?? ["?"]).isEmpty, "\(s["problems"] ?? "")")
        #expect(s.int("iidRequests") == 3)
        let batches = (s.list("iidBatches") as? [[String: Any]]) ?? []
        #expect(batches.map { $0.int("count") ?? 0 } == [1000, 1000, 500])
        #expect(batches.allSatisfy { $0.str("method") == "batchAdd" && $0.str("topic") == "scores" })
        #expect((s.dict("subscriptions")?.list("scores")?.count) == 2495)
        for line in ["failed d5: NOT_FOUND", "failed d1500: NOT_FOUND", "failed d2499: NOT_FOUND", "failed d10: INVALID_ARGUMENT",
                     "failed d2000: INVALID_ARGUMENT"] {
            #expect(sub.stdout.contains(line + "\n"), "\(line)")
        }
        #expect(sub.stdout.hasSuffix("fcm topics subscribe scores (app default): 2495 subscribed, 5 failed (INVALID_ARGUMENT 2, NOT_FOUND 3; "
                                     + "3 gone device(s) removed from the registry), 3 requests\n"), "\(sub.stdout.suffix(300))")
        // NOT_FOUND tokens are pruned as a send's UNREGISTERED; INVALID_ARGUMENT ones are kept.
        let ids = try h.registeredIDs()
        #expect(!ids.contains("d5") && !ids.contains("d1500") && !ids.contains("d2499"))
        #expect(ids.contains("d10") && ids.contains("d2000") && ids.contains("o0"))

        let unsub = try h.cli(["fcm", "topics", "unsubscribe", "--topic", "/topics/scores", "--tags", "fans"])
        #expect(unsub.status == 0, "\(unsub.stderr)")
        s = fake.state()
        #expect(s.int("iidRequests") == 6)
        let removes = ((s.list("iidBatches") as? [[String: Any]]) ?? []).dropFirst(3)
        #expect(removes.map { $0.int("count") ?? 0 } == [1000, 1000, 497])
        #expect(removes.allSatisfy { $0.str("method") == "batchRemove" })
        #expect((s.dict("subscriptions")?.list("scores")?.count) == 0)
        #expect(unsub.stdout.hasSuffix("fcm topics unsubscribe scores (app default): 2495 unsubscribed, 2 failed (INVALID_ARGUMENT 2), 3 requests\n"),
                "\(unsub.stdout.suffix(300))")
    }

    @Test func aTopicFCMRefusesIsOneLineBeforeAnyRequest() throws {
        let h = try PushCloudHarness(fcmArgs: [:])
        try register(h, count: 3)
        for topic in ["bad/topic", "", "sports news", String(repeating: "x", count: 901)] {
            let r = try h.cli(["fcm", "topics", "subscribe", "--topic", topic, "--tags", "fans"])
            #expect(r.status == 64, "\(topic): \(r.stderr)")
            let lines = r.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains("fcm topics subscribe: --topic: ") && lines[0].contains("is not a topic name FCM accepts"),
                    "\(r.stderr)")
        }
        let bad = try h.cli(["fcm", "topics", "subscribe", "--topic", "ok", "--tags", "fans &&"])
        #expect(bad.status == 64 && bad.stderr.contains("fcm topics subscribe: --tags: "), "\(bad.stderr)")
        let state = try #require(h.fcm).state()
        #expect(state.int("iidRequests") == 0 && state.int("tokenRequests") == 0)
    }

    @Test func unavailableAndInternalAreRetriedByThePolicy() throws {
        let h = try PushCloudHarness(fcmArgs: ["iid-fail-first": "2"])
        try register(h, count: 10, transient: [3])
        let r = try h.cli(["fcm", "topics", "subscribe", "--topic", "scores", "--tags", "fans"])
        #expect(r.status == 0, "\(r.stderr)")
        let s = try #require(h.fcm).state()
        // 503, 503, then the batch (d3 INTERNAL), then d3 alone.
        #expect(s.int("iidRequests") == 4)
        #expect(((s.list("iidBatches") as? [[String: Any]]) ?? []).map { $0.int("count") ?? 0 } == [10, 1])
        #expect((s.dict("subscriptions")?.list("scores")?.count) == 10)
        #expect(r.stdout == "fcm topics subscribe scores (app default): 10 subscribed, 0 failed, 4 requests\n", "\(r.stdout)")
    }
}
