import Foundation
import Testing
@testable import PushspoolKit

/// Every push type through the real binary to the fake APNs, which checks what Apple checks
/// (topic suffix per type, priority, size) and what the device would drop (payload shape).
/// Counted from the fake's log: each type arrives with its own apns-push-type, 0 refusals.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct APNsPushTypeIntegrationTests {
    static let la = #""pns":"apns","push_type":"liveactivity""#
    /// Job id, tag, job fields after the audience, push type the fake must count.
    static let jobs: [(String, String, String, String)] = [
        ("alert", "t-alert", #""pns":"apns","message":"hi","thread_id":"chat","interruption_level":"time-sensitive","url":"https://example.com/c""#, "alert"),
        ("background", "t-background", #""pns":"apns","push_type":"background","data":{"sync":"1"}"#, "background"),
        ("voip", "t-voip", #""pns":"apns","push_type":"voip","message":"Alice calling","data":{"call":"7"}"#, "voip"),
        ("location", "t-location", #""pns":"apns","push_type":"location","message":"where""#, "location"),
        ("complication", "t-complication", #""pns":"apns","push_type":"complication","message":"3 new""#, "complication"),
        ("fileprovider", "t-fileprovider", #""pns":"apns","push_type":"fileprovider","message":"changed""#, "fileprovider"),
        ("pushtotalk", "t-pushtotalk", #""pns":"apns","push_type":"pushtotalk","message":"Bob speaks""#, "pushtotalk"),
        ("widgets", "t-widgets", #""pns":"apns","push_type":"widgets""#, "widgets"),
        ("la-start", "t-start", #"\#(la),"title":"Final","message":"Kick-off","live_activity":{"event":"start","content_state":{"score":"0-0"},"attributes_type":"MatchAttributes","attributes":{"match":"42"}}"#, "liveactivity"),
        ("la-update", "activity:match-42", #"\#(la),"live_activity":{"event":"update","content_state":{"score":"2-1"},"stale_date":"2030-01-01T00:00:00Z"}"#, "liveactivity"),
        ("la-end", "activity:match-43", #"\#(la),"live_activity":{"event":"end","content_state":{"score":"3-1"},"dismissal_date":"2030-01-01T00:00:00Z"}"#, "liveactivity"),
    ]

    @Test func everyPushTypeReachesTheFakeWithNoRefusal() throws {
        let s = try APNsSpool()
        var tags: [String] = []
        for (_, tag, _, _) in Self.jobs where !tags.contains(tag) { tags.append(tag) }
        // Each tag's token is of the kind its job's push type goes to (token kinds: the registry
        // streams only those).
        let kinds = ["t-voip": "voip", "t-location": "location", "t-complication": "complication", "t-fileprovider": "fileprovider",
                     "t-pushtotalk": "pushtotalk", "t-widgets": "widgets", "t-start": "pushtostart",
                     "activity:match-42": "liveactivity", "activity:match-43": "liveactivity"]
        for (i, tag) in tags.enumerated() {
            try s.register(id: "d-\(tag)", handle: APNsSpool.token("0000", i + 1), tag: tag, tokenKind: kinds[tag])
        }
        for (id, tag, fields, _) in Self.jobs {
            s.drop(id, #"{"id":"\#(id)","to_tag":"\#(tag)",\#(fields)}"#)
        }
        let run = try s.runOnce()
        #expect(run.status == 0, "\(run.stderr)")
        for (id, tag, _, _) in Self.jobs {
            #expect(s.deliveries(id)["d-\(tag)"]?["status"] as? String == "delivered", "\(id): \(s.results(id))")
        }
        let state = waitForIdle(s.fake, answered: Self.jobs.count)
        #expect(state["byStatus"] as? [String: Int] == ["200": Self.jobs.count], "no refusal: \(state["problems"] ?? [])")
        var expected: [String: Int] = [:]
        for (_, _, _, type) in Self.jobs { expected[type, default: 0] += 1 }
        #expect(state["deliveredByPushType"] as? [String: Int] == expected)
        #expect((state["problems"] as? [Any])?.isEmpty == true)

        // The headers Apple reads, per type: topic suffix and priority.
        let headers = state["lastHeaders"] as? [String: [String: Any]] ?? [:]
        func sent(_ tag: String) -> [String: Any]? { headers[APNsSpool.token("0000", (tags.firstIndex(of: tag) ?? 0) + 1)] }
        #expect(sent("t-voip")?["topic"] as? String == "com.example.app.voip")
        #expect(sent("t-widgets")?["topic"] as? String == "com.example.app.push-type.widgets")
        #expect(sent("t-pushtotalk")?["topic"] as? String == "com.example.app.voip-ptt")
        #expect(sent("t-background")?["priority"] as? String == "5")
        #expect(sent("t-background")?["topic"] as? String == "com.example.app")
        let update = (sent("activity:match-42")?["payload"] as? [String: Any])?["aps"] as? [String: Any]
        #expect(update?["event"] as? String == "update")
        #expect(update?["content-state"] as? [String: String] == ["score": "2-1"])
        #expect(sent("activity:match-42")?["topic"] as? String == "com.example.app.push-type.liveactivity")
        let end = (sent("activity:match-43")?["payload"] as? [String: Any])?["aps"] as? [String: Any]
        #expect(end?["event"] as? String == "end")
        #expect(end?["dismissal-date"] as? Int == 1_893_456_000)
    }
}
