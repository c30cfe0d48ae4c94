import Foundation
import Testing
@testable import PushspoolKit

/// Token kinds through the real binary to the fake APNs, counted at the fake: a job reaches only
/// the registrations whose token kind serves its push type.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct APNsTokenKindIntegrationTests {
    static let la = #""pns":"apns","push_type":"liveactivity""#
    /// Job id, fields after the audience, the token kind it must reach.
    static let jobs: [(String, String, String)] = [
        ("alert", #""pns":"apns","message":"hi""#, "device"),
        ("background", #""pns":"apns","push_type":"background","data":{"sync":"1"}"#, "device"),
        ("voip", #""pns":"apns","push_type":"voip","message":"Alice calling""#, "voip"),
        ("location", #""pns":"apns","push_type":"location","message":"where""#, "location"),
        ("complication", #""pns":"apns","push_type":"complication","message":"3 new""#, "complication"),
        ("fileprovider", #""pns":"apns","push_type":"fileprovider","message":"changed""#, "fileprovider"),
        ("pushtotalk", #""pns":"apns","push_type":"pushtotalk","message":"Bob speaks""#, "pushtotalk"),
        ("widgets", #""pns":"apns","push_type":"widgets""#, "widgets"),
        ("la-start", #"\#(la),"title":"Final","message":"Kick-off","live_activity":{"event":"start","content_state":{"score":"0-0"},"attributes_type":"MatchAttributes","attributes":{"match":"42"}}"#, "pushtostart"),
        ("la-update", #"\#(la),"live_activity":{"event":"update","content_state":{"score":"2-1"}}"#, "liveactivity"),
        ("la-end", #"\#(la),"live_activity":{"event":"end","content_state":{"score":"3-1"}}"#, "liveactivity"),
    ]
    static let kinds = ["device", "voip", "liveactivity", "pushtostart", "location", "complication", "fileprovider", "pushtotalk", "widgets"]

    /// One token of every kind under one tag, every push type sent to that tag: each token gets
    /// exactly the pushes of its kind, and Apple (the fake) refuses none.
    @Test func everyPushTypeReachesExactlyItsTokenKind() throws {
        let s = try APNsSpool()
        for (i, kind) in Self.kinds.enumerated() {
            try s.register(id: "k-\(kind)", handle: APNsSpool.token("0000", i + 1), tag: "match:42", tokenKind: kind)
        }
        for (id, fields, _) in Self.jobs { s.drop(id, #"{"id":"\#(id)","to_tag":"match:42",\#(fields)}"#) }
        let run = try s.runOnce()
        #expect(run.status == 0, "\(run.stderr)")
        for (id, _, kind) in Self.jobs {
            let lines = s.deliveries(id)
            #expect(Set(lines.keys) == ["k-\(kind)"], "\(id): \(s.results(id))")
            #expect(lines["k-\(kind)"]?["status"] as? String == "delivered", "\(id)")
        }
        let state = waitForIdle(s.fake, answered: Self.jobs.count)
        #expect(state["byStatus"] as? [String: Int] == ["200": Self.jobs.count], "\(state["problems"] ?? [])")
        var expected: [String: Int] = [:]
        for (_, _, kind) in Self.jobs { expected[APNsSpool.token("0000", Self.kinds.firstIndex(of: kind)! + 1), default: 0] += 1 }
        #expect(state["perToken"] as? [String: Int] == expected)
    }

    /// An activity's token answered 410 Unregistered is pruned, as a device token is.
    @Test func aGoneActivityTokenIsPruned() throws {
        let s = try APNsSpool()
        try s.register(id: "act-gone", handle: APNsSpool.token("410a", 1), tag: "activity:m7", tokenKind: "liveactivity")
        try s.register(id: "act-live", handle: APNsSpool.token("0000", 2), tag: "activity:m7", tokenKind: "liveactivity")
        try s.register(id: "phone", handle: APNsSpool.token("0000", 3), tag: "activity:m7")
        s.drop("upd", #"{"id":"upd","to_tag":"activity:m7",\#(Self.la),"live_activity":{"event":"update","content_state":{"score":"1-0"}}}"#)
        #expect(try s.runOnce().status == 0)
        let lines = s.deliveries("upd")
        #expect(lines["act-gone"]?["status"] as? String == "unregistered", "\(s.results("upd"))")
        #expect(lines["act-live"]?["status"] as? String == "delivered")
        #expect(lines["phone"] == nil)
        #expect(try s.deviceIDs() == ["act-live", "phone"])
    }

    /// A broadcast channel created, listed from the registry (no request to Apple), used by one
    /// job (one request, its apns-request-id in the result log), listed with --refresh, deleted.
    @Test func aBroadcastChannelIsCreatedUsedAndDeleted() throws {
        let s = try APNsSpool(apnsExtra: #", "channels_endpoint": "__URL__""#)
        // The channel API is on the fake's port too.
        let config = try String(contentsOfFile: s.configPath, encoding: .utf8).replacingOccurrences(of: "__URL__", with: s.fake.url)
        s.dir.write("pushspool.json", config)
        let created = try s.cli(["apns", "channels", "create", "--storage-policy", "1"] + s.common)
        #expect(created.status == 0, "\(created.stderr)")
        let id = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!id.isEmpty)
        let listed = try s.cli(["apns", "channels", "list"] + s.common)
        #expect(listed.stdout.contains(#""channel":"\#(id)""#) && listed.stdout.contains(#""storage_policy":1"#), "\(listed.stdout)")
        var channels = s.fake.state()["channels"] as? [String: Any]
        #expect(channels?["created"] as? Int == 1 && channels?["listed"] as? Int == 0)

        s.drop("score", #"{"id":"score","apns_channel":"\#(id)",\#(Self.la),"live_activity":{"event":"update","content_state":{"score":"2-1"}}}"#)
        s.drop("stranger", #"{"id":"stranger","apns_channel":"c3RyYW5nZXI=",\#(Self.la),"live_activity":{"event":"end"}}"#)
        let run = try s.runOnce()
        let state = waitForIdle(s.fake, answered: 2)
        channels = state["channels"] as? [String: Any]
        let broadcasts = channels?["broadcasts"] as? [[String: Any]] ?? []
        #expect(broadcasts.count == 1, "\(state)")
        #expect(broadcasts.first?["channel"] as? String == id)
        let lines = s.results("score").filter { $0["type"] as? String == "delivery" }
        #expect(lines.count == 1, "\(s.results("score"))")
        #expect(lines.first?["channel"] as? String == id && lines.first?["status"] as? String == "delivered")
        #expect(lines.first?["provider_id"] as? String == broadcasts.first?["requestID"] as? String)
        // A channel the app does not have: refused when picked up, nothing sent.
        #expect(s.dir.list("spool/failed").contains("stranger.json"), "\(run.stdout)")
        #expect(run.stdout.contains("apns_channel: app default has no channel c3RyYW5nZXI= in the registry"), "\(run.stdout)")

        let refreshed = try s.cli(["apns", "channels", "list", "--refresh"] + s.common)
        #expect(refreshed.status == 0 && refreshed.stdout.contains(id), "\(refreshed.stderr)")
        let deleted = try s.cli(["apns", "channels", "delete", "--channel", id] + s.common)
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(try s.cli(["apns", "channels", "list"] + s.common).stdout.isEmpty)
        channels = s.fake.state()["channels"] as? [String: Any]
        #expect(channels?["deleted"] as? Int == 1 && channels?["listed"] as? Int == 1)
        #expect((channels?["live"] as? [Any])?.isEmpty == true)
    }
}
