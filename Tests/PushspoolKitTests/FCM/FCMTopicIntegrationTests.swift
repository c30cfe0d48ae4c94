import Foundation
import Testing
@testable import PushspoolKit
import PushspoolCore

/// FCM topics and conditions: one v1 request per job, logged as one line with the message name,
/// and no device of the registry touched. Counted from the fake FCM's log.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct FCMTopicIntegrationTests {
    @Test func aTopicAndAConditionAreOneRequestEach() throws {
        let h = try PushCloudHarness(fcmArgs: [:])
        try h.register([("f-1", "fcm", "tok-1"), ("f-2", "fcm", "tok-2")], tag: "news")
        let condition = "'scores' in topics && !('muted' in topics || 'away' in topics)"
        try h.submit("topic", #"{"id":"topic","fcm_topic":"scores","pns":"fcm","title":"Goal","message":"2-1","analytics_label":"match_42"}"#)
        try h.submit("condition", #"{"id":"condition","fcm_condition":"\#(condition)","pns":"fcm","data":{"score":"2-1"},"message":"2-1"}"#)
        let run = try h.runOnce()
        #expect(run.status == 0, "\(run.stderr)")

        let s = try #require(h.fcm).state()
        #expect((s.list("problems") ?? ["?"]).isEmpty, "\(s["problems"] ?? "")")
        #expect(s.int("sends") == 2, "one request per job, none per device")
        #expect(s.dict("perToken")?.isEmpty == true)
        let sends = (s.list("serviceSends") as? [[String: Any]]) ?? []
        #expect(Set(sends.compactMap { $0.str("kind") }) == ["topic", "condition"])
        #expect(sends.first { $0.str("kind") == "condition" }?.str("value") == condition)
        let topic = sends.first { $0.str("kind") == "topic" }
        #expect(topic?.str("value") == "scores")
        #expect((topic?.dict("message")?.dict("fcm_options"))?.str("analytics_label") == "match_42")

        for (job, field, value) in [("topic", "topic", "scores"), ("condition", "condition", condition)] {
            let lines = h.results(job).filter { $0.str("type") == "delivery" }
            #expect(lines.count == 1, "\(job)")
            #expect(lines.first?.str(field) == value)
            #expect(lines.first?.str("status") == "delivered")
            #expect(lines.first?.str("device") == nil)
            #expect(lines.first?.str("provider_id") == sends.first { $0.str("kind") == field }?.str("name"))
            let summary = h.results(job).last
            #expect(summary?.int("delivered") == 1 && summary?.str("status") == "done")
        }
    }
}
