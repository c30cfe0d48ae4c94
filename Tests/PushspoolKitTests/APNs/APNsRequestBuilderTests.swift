import Foundation
import PushspoolHTTP
import PushspoolCore
import Testing
@testable import PushspoolKit

struct APNsRequestBuilderTests {
    let builder = APNsRequestBuilder(baseURL: "https://api.push.apple.com/", topic: "com.example.app")
    let token = "5F" + String(repeating: "0a", count: 31)
    let payload = Array(#"{"aps":{"alert":"From bob: hi"}}"#.utf8)
    let id = "3b2a7a1c-0000-5000-8000-000000000001"

    func headerText(_ r: HTTPRequest) -> String { r.headers.map { "\($0.0): \($0.1)" }.joined(separator: "\n") }

    @Test func buildsTheAlertRequestByteForByte() throws {
        let n = APNsNotification(payload: payload, ttlSeconds: 3600, collapseID: "score")
        let r = try builder.build(deviceToken: token, notification: n, jwt: "J.W.T", apnsID: id, now: 1_700_000_000).get()
        #expect(r.method == "POST")
        #expect(r.url == "https://api.push.apple.com/3/device/5f" + String(repeating: "0a", count: 31))
        #expect(headerText(r) == """
            authorization: bearer J.W.T
            apns-topic: com.example.app
            apns-push-type: alert
            apns-priority: 10
            apns-expiration: 1700003600
            apns-collapse-id: score
            apns-id: 3b2a7a1c-0000-5000-8000-000000000001
            content-type: application/json
            """)
        #expect(r.body == payload)
    }

    @Test func backgroundPushIsPriorityFiveWithoutExpirationByDefault() throws {
        let n = APNsNotification(payload: Array(#"{"aps":{"content-available":1}}"#.utf8), pushType: "background", priority: 10)
        let r = try builder.build(deviceToken: token, notification: n, jwt: "J", apnsID: id, now: 0).get()
        #expect(headerText(r) == """
            authorization: bearer J
            apns-topic: com.example.app
            apns-push-type: background
            apns-priority: 5
            apns-id: 3b2a7a1c-0000-5000-8000-000000000001
            content-type: application/json
            """)
    }

    @Test(arguments: [("voip", "com.example.app.voip"), ("location", "com.example.app.location-query"),
                      ("liveactivity", "com.example.app.push-type.liveactivity"), ("alert", "com.example.app"),
                      ("background", "com.example.app"), ("complication", "com.example.app.complication"),
                      ("fileprovider", "com.example.app.pushkit.fileprovider"), ("pushtotalk", "com.example.app.voip-ptt"),
                      ("widgets", "com.example.app.push-type.widgets")])
    func topicSuffixFollowsPushType(_ pushType: String, _ topic: String) throws {
        let r = try builder.build(deviceToken: token, notification: APNsNotification(payload: payload, pushType: pushType),
                                  jwt: "J", apnsID: id, now: 0).get()
        #expect(r.headers.first { $0.0 == "apns-topic" }?.1 == topic)
    }

    @Test func zeroTTLMeansDeliverNowOrNever() throws {
        let r = try builder.build(deviceToken: token, notification: APNsNotification(payload: payload, ttlSeconds: 0),
                                  jwt: "J", apnsID: id, now: 1_700_000_000).get()
        #expect(r.headers.first { $0.0 == "apns-expiration" }?.1 == "0")
    }

    static func padded(_ size: Int) -> [UInt8] {
        Array(#"{"aps":{"alert":""#.utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: size - 20) + Array(#""}}"#.utf8)
    }

    @Test(arguments: [(4096, "alert", true), (4097, "alert", false), (5120, "voip", true), (5121, "voip", false)])
    func payloadSizeIsCheckedBeforeSending(_ size: Int, _ pushType: String, _ accepted: Bool) {
        let body = Self.padded(size)
        #expect(body.count == size)
        let result = builder.build(deviceToken: token, notification: APNsNotification(payload: body, pushType: pushType),
                                   jwt: "J", apnsID: id, now: 0)
        switch result {
        case .success: #expect(accepted)
        case .failure(let refusal):
            #expect(!accepted)
            #expect(refusal.disposition == .rejected)
            #expect(refusal.reason.hasPrefix("PayloadTooLarge"))
        }
    }

    @Test func collapseIDOver64BytesIsRefused() {
        let ok = builder.build(deviceToken: token, notification: APNsNotification(payload: payload, collapseID: String(repeating: "c", count: 64)),
                               jwt: "J", apnsID: id, now: 0)
        let tooLong = builder.build(deviceToken: token, notification: APNsNotification(payload: payload, collapseID: String(repeating: "c", count: 65)),
                                    jwt: "J", apnsID: id, now: 0)
        #expect((try? ok.get()) != nil)
        #expect(throws: APNsRequestBuilder.Refusal.self) { try tooLong.get() }
    }

    @Test(arguments: [("<5f0a0a0a 0a0a0a0a>", "5f0a0a0a0a0a0a0a"), ("ABCDEF0123456789", "abcdef0123456789"),
                      ("not-hex-at-all!!", nil), ("abc", nil), ("", nil)])
    func tokenFormat(_ raw: String, _ normalized: String?) {
        #expect(APNsRequestBuilder.normalizedToken(raw) == normalized)
    }

    /// The device URL made at its final size is the two parts one after the other: long and
    /// small (inline) strings, an empty part, non-ASCII text.
    @Test(arguments: [("https://api.push.apple.com/3/device/", String(repeating: "ab", count: 32)),
                      ("https://h/", "x"), ("", "abc"), ("abc", ""), ("", ""), ("https://bücher.example/3/device/", "ü0")])
    func deviceURLJoined(_ prefix: String, _ rest: String) {
        let joined = APNsRequestBuilder.joined(prefix, rest)
        #expect(joined == prefix + rest)
        #expect(Array(joined.utf8) == Array(prefix.utf8) + Array(rest.utf8))
    }

    /// A 64-character token with one byte changed, at every position (inside the eight-byte
    /// words and in the tail past them), to each byte just outside the hex ranges, an uppercase
    /// hex letter (lowercased, the token kept) and a non-ASCII one.
    @Test func tokenCheckedAtEveryPosition() {
        let good = Array("0123456789abcdef".utf8) + Array("fedcba9876543210".utf8) + Array(repeating: UInt8(ascii: "9"), count: 30) + Array("a0".utf8)
        #expect(APNsRequestBuilder.normalizedToken(String(decoding: good, as: UTF8.self)) == String(decoding: good, as: UTF8.self))
        for length in [64, 70] {
            let token = Array((good + good).prefix(length))
            for i in token.indices {
                for bad: UInt8 in [0x2F, 0x3A, 0x40, 0x60, 0x67, 0x7F, 0xC3, 0x00] {
                    var t = token
                    t[i] = bad
                    #expect(APNsRequestBuilder.normalizedToken(String(decoding: t, as: UTF8.self)) == nil, "byte \(bad) at \(i) of \(length)")
                }
                var upper = token
                upper[i] = UInt8(ascii: "C")
                var lowered = token
                lowered[i] = UInt8(ascii: "c")
                #expect(APNsRequestBuilder.normalizedToken(String(decoding: upper, as: UTF8.self)) == String(decoding: lowered, as: UTF8.self))
            }
        }
    }

    @Test func malformedTokenIsDroppedWithoutSending() {
        let result = builder.build(deviceToken: "zz-not-a-token", notification: APNsNotification(payload: payload),
                                   jwt: "J", apnsID: id, now: 0)
        guard case .failure(let refusal) = result else { Issue.record("sent a malformed token"); return }
        #expect(refusal.disposition == .deviceGone(since: nil))
        #expect(refusal.reason == "BadDeviceToken")
    }

    @Test func apnsIDIsAStableLowercaseUUIDPerJobAndDevice() {
        let a = APNsProvider.apnsID(jobID: "job1", deviceID: "dev1")
        #expect(a == APNsProvider.apnsID(jobID: "job1", deviceID: "dev1"))
        #expect(a != APNsProvider.apnsID(jobID: "job1", deviceID: "dev2"))
        #expect(a.wholeMatch(of: /[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/) != nil)
    }
}
