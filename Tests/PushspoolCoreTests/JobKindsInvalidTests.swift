import Foundation
import Testing
@testable import PushspoolCore

/// Jobs that break a rule of "Every kind of push", each with the exact one line `validate`
/// prints for it: what Apple, Google or Microsoft would refuse (or the device would drop), found
/// before anything is sent.
@Suite struct JobKindsInvalidTests {
    static let apns = #""to_tag":"a","pns":"apns""#
    static let la = #""to_tag":"a","pns":"apns","push_type":"liveactivity""#
    static func text(_ n: Int) -> String { String(repeating: "x", count: n) }

    static let cases: [(String, String, String)] = [
        ("unknown push type", #"{\#(apns),"message":"m","push_type":"silent"}"#,
         #"push_type: must be one of alert, background, voip, liveactivity, location, complication, fileprovider, pushtotalk, widgets, got "silent""#),
        ("push type not a string", #"{\#(apns),"message":"m","push_type":5}"#, "push_type: must be a string, got number"),
        ("push type without apns", #"{"to_tag":"a","pns":"fcm","message":"m","push_type":"voip"}"#,
         "push_type: applies to APNs only, and pns does not name apns"),
        ("background job with a title", #"{\#(apns),"push_type":"background","title":"T","data":{"k":"v"}}"#,
         #"title: not allowed with push_type "background" (a background push has no alert, sound or badge: put what the app reads in data)"#),
        ("background job with a message", #"{\#(apns),"push_type":"background","message":"m"}"#,
         #"message: not allowed with push_type "background" (a background push has no alert, sound or badge: put what the app reads in data)"#),
        ("background job with a badge", #"{\#(apns),"push_type":"background","badge":1}"#,
         #"badge: not allowed with push_type "background" (a background push has no alert, sound or badge: put what the app reads in data)"#),
        ("background job with a thread", #"{\#(apns),"push_type":"background","thread_id":"t"}"#,
         #"thread_id: not allowed with push_type "background" (a background push has no alert, sound or badge: put what the app reads in data)"#),
        ("background job at high priority", #"{\#(apns),"push_type":"background","priority":"high"}"#,
         #"priority: push_type "background" always goes at priority 5 (Apple refuses 10): leave it out or use "normal""#),
        ("background job to WNS", #"{"to_tag":"a","pns":["apns","wns"],"push_type":"background"}"#,
         #"pns: push_type "background" is a silent push: wns cannot carry one (apns, and fcm as a data message, can)"#),
        ("widgets job with a sound", #"{\#(apns),"push_type":"widgets","sound":"ding"}"#,
         #"sound: not allowed with push_type "widgets" (a widgets push only reloads the app's widgets)"#),
        ("liveactivity without live_activity", #"{\#(la)}"#, #"live_activity: required with push_type "liveactivity""#),
        ("live_activity without its push type", #"{\#(apns),"message":"m","live_activity":{"event":"update","content_state":{}}}"#,
         #"live_activity: needs push_type "liveactivity""#),
        ("liveactivity update without content_state", #"{\#(la),"live_activity":{"event":"update"}}"#,
         "live_activity.content_state: required for event update"),
        ("liveactivity start without an alert",
         #"{\#(la),"live_activity":{"event":"start","content_state":{"s":1},"attributes_type":"Match","attributes":{"id":"42"}}}"#,
         "message: required for a Live Activity start (its alert)"),
        ("liveactivity start without attributes_type",
         #"{\#(la),"message":"Kick-off","live_activity":{"event":"start","content_state":{"s":1},"attributes":{"id":"42"}}}"#,
         "live_activity.attributes_type: required for event start"),
        ("liveactivity update with a dismissal date",
         #"{\#(la),"live_activity":{"event":"update","content_state":{},"dismissal_date":"2026-11-26T20:00:00Z"}}"#,
         "live_activity.dismissal_date: only for event end"),
        ("liveactivity end with attributes", #"{\#(la),"live_activity":{"event":"end","attributes":{"id":"42"}}}"#,
         "live_activity.attributes: only for event start"),
        ("liveactivity unknown event", #"{\#(la),"live_activity":{"event":"pause"}}"#,
         #"live_activity.event: must be start, update or end, got "pause""#),
        ("liveactivity without event", #"{\#(la),"live_activity":{"content_state":{}}}"#,
         "live_activity.event: required (start, update or end)"),
        ("liveactivity stale date not RFC 3339", #"{\#(la),"live_activity":{"event":"update","content_state":{},"stale_date":"tomorrow"}}"#,
         #"live_activity.stale_date: must be an RFC 3339 time with an offset, e.g. "2026-11-22T09:00:00Z", got "tomorrow""#),
        ("liveactivity content_state not an object", #"{\#(la),"live_activity":{"event":"update","content_state":[1]}}"#,
         "live_activity.content_state: must be an object (the activity's ContentState), got array"),
        ("liveactivity misspelt key", #"{\#(la),"live_activity":{"event":"end","contentState":{}}}"#,
         #"live_activity.contentState: unknown field (did you mean "content_state"?)"#),
        ("liveactivity to FCM too", #"{"to_tag":"a","pns":["apns","fcm"],"message":"m","push_type":"liveactivity","live_activity":{"event":"end"}}"#,
         #"pns: a Live Activity exists on APNs only: pns must be "apns""#),
        ("an alert payload of 4,097 bytes", #"{\#(apns),"message":"\#(text(4077))"}"#, "message: APNs payload is 4097 bytes (limit 4096)"),
        ("a VoIP payload of 5,121 bytes", #"{\#(apns),"push_type":"voip","message":"\#(text(5101))"}"#,
         "message: APNs payload (voip) is 5121 bytes (limit 5120)"),
        ("an FCM message of 4,097 bytes", #"{"to_tag":"a","pns":"fcm","message":"\#(text(4062))"}"#,
         "message: FCM message is 4097 bytes (limit 4096)"),
        ("a WNS toast of 5,001 bytes", #"{"to_tag":"a","pns":"wns","message":"\#(text(4907))"}"#,
         "message: WNS payload is 5001 bytes (limit 5000)"),
        ("a Web Push record over 4,096 bytes", #"{"to_tag":"a","pns":"web","message":"\#(text(3983))"}"#,
         "message: Web Push payload is 3994 bytes (limit 3993 before encryption)"),
        ("a condition with 6 topics", #"{"fcm_condition":"'a' in topics || 'b' in topics || 'c' in topics || 'd' in topics || 'e' in topics || 'f' in topics","pns":"fcm","message":"m"}"#,
         "fcm_condition: names 6 topics (FCM allows at most 5)"),
        ("a condition cut short", #"{"fcm_condition":"'a' in topics &&","pns":"fcm","message":"m"}"#,
         "fcm_condition: at position 16: expected a quoted topic, '(' or '!'"),
        ("a condition without 'in topics'", #"{"fcm_condition":"'a' && 'b' in topics","pns":"fcm","message":"m"}"#,
         "fcm_condition: at position 4: expected 'in topics' after the topic"),
        ("an invalid topic name", #"{"fcm_topic":"news/today","pns":"fcm","message":"m"}"#,
         #"fcm_topic: invalid topic "news/today" (expected 1 to 900 of A-Z a-z 0-9 - _ . ~ %)"#),
        ("an FCM topic sent to APNs", #"{"fcm_topic":"news","pns":"apns","message":"m"}"#,
         #"pns: an FCM topic is an FCM audience: pns must be "fcm""#),
        ("an FCM topic in several languages", #"{"fcm_topic":"news","pns":"fcm","message":"m","localized":{"fr":{"message":"salut"}}}"#,
         "localized: an FCM topic or condition is one request, so one text: leave localized out"),
        ("a topic beside a tag", #"{"to_tag":"a","fcm_topic":"news","pns":"fcm","message":"m"}"#,
         "fcm_topic: not allowed together with to_tag (give exactly one of to_tag, tags, broadcast, fcm_topic, fcm_condition, apns_channel)"),
        ("an apns_channel job whose push type is not liveactivity", #"{"apns_channel":"Y2gx","pns":"apns","message":"m"}"#,
         #"apns_channel: needs push_type "liveactivity" (a broadcast channel carries Live Activity updates only)"#),
        ("a Live Activity started on a channel",
         #"{"apns_channel":"Y2gx","pns":"apns","push_type":"liveactivity","title":"t","message":"m","live_activity":{"event":"start","content_state":{},"attributes_type":"A","attributes":{}}}"#,
         "live_activity.event: a broadcast channel updates or ends the activities subscribed to it; start one with push-to-start tokens (to_tag/tags, token_kind pushtostart)"),
        ("a channel id that is not base64", #"{"apns_channel":"ch-1","pns":"apns","push_type":"liveactivity","live_activity":{"event":"end"}}"#,
         #"apns_channel: invalid channel id "ch-1" (Apple's base64 channel id, 1-256 characters of A-Z a-z 0-9 + / =)"#),
        ("a channel sent to FCM too", #"{"apns_channel":"Y2gx","pns":["apns","fcm"],"message":"m","push_type":"liveactivity","live_activity":{"event":"end"}}"#,
         #"pns: a Live Activity exists on APNs only: pns must be "apns""#),
        ("a raw background payload with an alert", #"{\#(apns),"push_type":"background","payload":{"apns":{"aps":{"alert":"x"}}}}"#,
         #"payload.apns: push_type "background" needs aps.content-available 1 and no alert, sound or badge"#),
        ("a raw Live Activity update without content-state",
         #"{\#(la),"live_activity":{"event":"update","content_state":{}},"payload":{"apns":{"aps":{"event":"update","timestamp":1}}}}"#,
         "payload.apns: a Live Activity update needs aps.content-state (an object)"),
        ("unknown interruption level", #"{\#(apns),"message":"m","interruption_level":"urgent"}"#,
         #"interruption_level: must be one of passive, active, time-sensitive, critical, got "urgent""#),
        ("relevance score over 1", #"{\#(apns),"message":"m","relevance_score":2}"#, "relevance_score: must be a number from 0 to 1, got 2"),
        ("url over http", #"{\#(apns),"message":"m","url":"http://example.com"}"#,
         #"url: must be an https:// URL without spaces, got "http://example.com""#),
        ("analytics label with a space", #"{"to_tag":"a","pns":"fcm","message":"m","analytics_label":"a b"}"#,
         #"analytics_label: must be 1 to 50 of A-Z a-z 0-9 - _ . ~ %, got "a b""#),
        ("image on FCM without a title", #"{"to_tag":"a","pns":"fcm","message":"m","image":"https://example.com/a.png"}"#,
         "image: FCM shows an image only in a notification, which needs title"),
        ("url beside data.url", #"{\#(apns),"message":"m","url":"https://example.com","data":{"url":"x"}}"#,
         "data.url: is where APNs carries url; use another key"),
        ("unknown WNS type", #"{"to_tag":"a","pns":"wns","message":"m","wns_type":"banner"}"#,
         #"wns_type: must be one of toast, tile, badge, raw, got "banner""#),
        ("WNS type without WNS", #"{\#(apns),"message":"m","wns_type":"tile"}"#, "wns_type: applies to WNS only, and pns does not name wns"),
        ("WNS badge without a badge", #"{"to_tag":"a","pns":"wns","message":"m","wns_type":"badge"}"#,
         #"badge: required with wns_type "badge" (the number the badge shows)"#),
        ("WNS tile with a toast payload", #"{"to_tag":"a","pns":"wns","wns_type":"tile","payload":{"wns":"<toast/>"}}"#,
         #"payload.wns: is a wns/toast document, but wns_type is "tile""#),
        ("WNS tag over 16 characters", #"{"to_tag":"a","pns":"wns","message":"m","collapse_id":"\#(text(17))"}"#,
         "collapse_id: goes to WNS as X-WNS-Tag: at most 16 characters, got 17"),
    ]

    @Test(arguments: cases)
    func reportsTheOneProblem(name: String, json: String, expected: String) {
        let (job, problems) = parseJob(json)
        #expect(job == nil, "\(name)")
        #expect(problems == [expected], "\(name)")
    }

    @Test func tableIsLargeEnough() {
        #expect(Self.cases.count >= 30)
    }
}
