import Foundation
import Testing
@testable import PushspoolCore

/// Valid jobs of every kind of push, parsed and rendered byte for byte.
@Suite struct JobKindsTests {
    static func send(_ json: String) throws -> SendJob {
        let (job, problems) = parseJob(json)
        #expect(problems == [])
        guard case .send(let send)? = job?.kind else { throw JobProblem(field: "", message: "not a send job") }
        return send
    }

    static func apns(_ json: String, now: Date = Date(timeIntervalSince1970: 1_764_000_000)) throws -> APNsNotification {
        let message = try send(json).message
        guard case .apns(let n) = try PayloadRenderer.render(message, for: .apns, now: now) else {
            throw JobProblem(field: "", message: "not APNs")
        }
        // What pushspool renders has the shape its push type needs (what the device reads).
        #expect(APNsPayloadShape.problem(message.native.pushType, try JSONParser.parse(n.payload)) == nil)
        return n
    }

    static func text(_ n: APNsNotification) -> String { String(decoding: n.payload, as: UTF8.self) }

    @Test func backgroundIsContentAvailableAtPriorityFive() throws {
        let n = try Self.apns(#"{"to_tag":"a","pns":"apns","push_type":"background","data":{"sync":"1"}}"#)
        #expect(Self.text(n) == #"{"aps":{"content-available":1},"sync":"1"}"#)
        #expect(n.pushType == "background" && n.priority == 5)
    }

    @Test func widgetsIsContentChanged() throws {
        let n = try Self.apns(#"{"to_tag":"a","pns":"apns","push_type":"widgets"}"#)
        #expect(Self.text(n) == #"{"aps":{"content-changed":true}}"#)
        #expect(n.pushType == "widgets")
    }

    @Test func liveActivityUpdateDefaultsItsTimestampToNow() throws {
        let n = try Self.apns(#"{"to_tag":"activity:match-42","pns":"apns","push_type":"liveactivity","live_activity":{"event":"update","content_state":{"score":"2-1"},"stale_date":"2026-11-26T21:00:00Z","relevance_score":50}}"#)
        #expect(Self.text(n) == #"{"aps":{"timestamp":1764000000,"event":"update","content-state":{"score":"2-1"},"stale-date":1795726800,"relevance-score":50}}"#)
        #expect(n.pushType == "liveactivity" && n.priority == 10)
    }

    @Test func liveActivityStartCarriesAttributesAndAlert() throws {
        let n = try Self.apns(#"{"to_tag":"a","pns":"apns","title":"Match","message":"Kick-off","push_type":"liveactivity","live_activity":{"event":"start","timestamp":"2026-11-26T19:00:00Z","content_state":{"score":"0-0"},"attributes_type":"MatchAttributes","attributes":{"match":"42"}}}"#)
        #expect(Self.text(n) == #"{"aps":{"timestamp":1795719600,"event":"start","content-state":{"score":"0-0"},"attributes-type":"MatchAttributes","attributes":{"match":"42"},"alert":{"title":"Match","body":"Kick-off"}}}"#)
    }

    @Test func liveActivityEndWithDismissal() throws {
        let n = try Self.apns(#"{"to_tag":"a","pns":"apns","push_type":"liveactivity","live_activity":{"event":"end","content_state":{"score":"3-1"},"dismissal_date":"2026-11-26T22:00:00+01:00"}}"#)
        #expect(Self.text(n) == #"{"aps":{"timestamp":1764000000,"event":"end","content-state":{"score":"3-1"},"dismissal-date":1795726800}}"#)
    }

    @Test func alertCarriesTheNativeFields() throws {
        let n = try Self.apns(#"{"to_tag":"a","pns":"apns","message":"m","thread_id":"chat-7","interruption_level":"time-sensitive","relevance_score":0.5,"url":"https://example.com/c/7"}"#)
        #expect(Self.text(n) == #"{"aps":{"alert":"m","thread-id":"chat-7","interruption-level":"time-sensitive","relevance-score":0.5},"url":"https://example.com/c/7"}"#)
    }

    @Test(arguments: APNsPushType.allCases.filter { ![.background, .widgets, .liveactivity].contains($0) })
    func pushKitTypesCarryTheirType(type: APNsPushType) throws {
        let n = try Self.apns(#"{"to_tag":"a","pns":"apns","message":"call","push_type":"\#(type.rawValue)"}"#)
        #expect(n.pushType == type.rawValue)
        #expect(Self.text(n) == #"{"aps":{"alert":"call"}}"#)
    }

    @Test func voipMayUseFiveKilobytes() throws {
        let n = try Self.apns(#"{"to_tag":"a","pns":"apns","push_type":"voip","message":"\#(String(repeating: "x", count: 5100))"}"#)
        #expect(n.payload.count == 5120)
    }

    @Test func fcmMapsUrlImageAndAnalyticsLabel() throws {
        let job = try Self.send(#"{"to_tag":"a","pns":"fcm","title":"T","message":"m","url":"https://example.com/x","image":"https://example.com/i.png","analytics_label":"promo_7"}"#)
        guard case .fcm(let n) = try PayloadRenderer.render(job.message, for: .fcm) else { Issue.record("not FCM"); return }
        #expect(n.message.encodedString == #"{"notification":{"title":"T","body":"m","image":"https://example.com/i.png"},"data":{"message":"m","url":"https://example.com/x"},"webpush":{"fcm_options":{"link":"https://example.com/x"}},"fcm_options":{"analytics_label":"promo_7"}}"#)
    }

    @Test func silentJobGoesToFCMAsDataOnly() throws {
        let job = try Self.send(#"{"to_tag":"a","pns":["apns","fcm"],"push_type":"background","data":{"sync":"1"}}"#)
        guard case .fcm(let n) = try PayloadRenderer.render(job.message, for: .fcm) else { Issue.record("not FCM"); return }
        #expect(n.message.encodedString == #"{"data":{"sync":"1"}}"#)
    }

    static func wns(_ json: String) throws -> WNSNotification {
        guard case .wns(let n) = try PayloadRenderer.render(try send(json).message, for: .wns) else {
            throw JobProblem(field: "", message: "not WNS")
        }
        return n
    }

    @Test func wnsTileBadgeAndRaw() throws {
        let tile = try Self.wns(#"{"to_tag":"a","pns":"wns","message":"2-1","wns_type":"tile","collapse_id":"score","ttl_seconds":600}"#)
        #expect(String(decoding: tile.body, as: UTF8.self) == #"<tile><visual><binding template="TileWide"><text id="1">2-1</text></binding></visual></tile>"#)
        #expect(tile.type == "wns/tile" && tile.contentType == "text/xml" && tile.tag == "score" && tile.ttlSeconds == 600)
        let badge = try Self.wns(#"{"to_tag":"a","pns":"wns","badge":3,"wns_type":"badge"}"#)
        #expect(String(decoding: badge.body, as: UTF8.self) == #"<badge value="3"/>"#)
        #expect(badge.type == "wns/badge")
        let raw = try Self.wns(#"{"to_tag":"a","pns":"wns","message":"m","data":{"k":"v"},"wns_type":"raw"}"#)
        #expect(String(decoding: raw.body, as: UTF8.self) == #"{"message":"m","k":"v"}"#)
        #expect(raw.type == "wns/raw" && raw.contentType == "application/octet-stream")
    }

    @Test(arguments: [
        "'a' in topics",
        "\"a\" in topics && !('b' in topics || 'c' in topics)",
        "('a' in topics&&'b' in topics)||'c' in topics",
    ])
    func conditionsFCMAccepts(text: String) {
        #expect((try? FCMCondition.topics(in: text).get()) != nil)
    }

    @Test func topicsAndConditionsAreAudiences() throws {
        #expect(try Self.send(#"{"fcm_topic":"/topics/news","pns":"fcm","message":"m"}"#).audience == .fcmTopic("news"))
        let c = "'a' in topics && !'b' in topics"
        #expect(try Self.send(#"{"fcm_condition":"\#(c)","pns":"fcm","message":"m"}"#).audience == .fcmCondition(c))
        let n = FCMNotification(message: .object([("data", .object([("k", .string("v"))]))]))
        #expect(String(decoding: n.body(target: "topic", "news"), as: UTF8.self) == #"{"message":{"topic":"news","data":{"k":"v"}}}"#)
    }
}
