import Foundation
import PushspoolHTTP
import PushspoolCore
import Testing
@testable import PushspoolKit

/// The hub's native-send requests, compared byte for byte (URL, ordered headers, body).
@Suite struct AzureHubRequestTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let toast = #"<toast><visual><binding template="ToastText01"><text id="1">From bob: hi</text></binding></visual></toast>"#
    static let apple = APNsNotification(payload: Array(#"{"aps":{"alert":"From bob: hi"}}"#.utf8))
    static let fcm = FCMNotification(message: .object([("data", .object([("message", .string("From bob: hi"))]))]))
    static let builder = AzureHubRequest(baseURL: "https://ns.servicebus.windows.net", hub: "myhub")

    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
    func headers(_ r: HTTPRequest) -> [String] { r.headers.map { "\($0.0): \($0.1)" } }

    @Test func appleCarriesTheTagAndTheAPNsPayload() {
        let r = Self.builder.request(.apns(Self.apple), tags: "username:alice", authorization: "SAS", now: Self.now)
        #expect(r.method == "POST")
        #expect(r.url == "https://ns.servicebus.windows.net/myhub/messages/?api-version=2015-01")
        #expect(headers(r) == [
            "Authorization: SAS", "Content-Type: application/json;charset=utf-8",
            "ServiceBusNotification-Format: apple", "ServiceBusNotification-Tags: username:alice",
            "apns-push-type: alert", "apns-priority: 10",
        ])
        #expect(text(r.body) == #"{"aps":{"alert":"From bob: hi"}}"#)
    }

    @Test func applePassesExpiryAndCollapseHeadersThrough() {
        let n = APNsNotification(payload: Self.apple.payload, pushType: "background", priority: 5,
                                 ttlSeconds: 3600, collapseID: "score")
        let r = Self.builder.request(.apns(n), tags: nil, authorization: "SAS", now: Self.now)
        #expect(Array(headers(r).dropFirst(3)) == [
            "apns-push-type: background", "apns-priority: 5", "apns-expiration: 1800003600",
            "ServiceBusNotification-Apns-Expiry: 2027-01-15T09:00:00Z", "apns-collapse-id: score",
        ])
    }

    @Test func fcmV1SendsTheEnvelopeWithoutTargetOnTheDocumentedAPI() {
        let r = Self.builder.request(.fcm(Self.fcm), tags: "a || b", authorization: "SAS", now: Self.now)
        #expect(r.url == "https://ns.servicebus.windows.net/myhub/messages/?api-version=2015-01")
        #expect(headers(r) == [
            "Authorization: SAS", "Content-Type: application/json;charset=utf-8",
            "ServiceBusNotification-Format: fcmV1", "ServiceBusNotification-Tags: a || b",
        ])
        #expect(text(r.body) == #"{"message":{"data":{"message":"From bob: hi"}}}"#)
    }

    @Test func legacyGCMSendsTheTutorialBody() {
        var b = Self.builder
        b.fcmFormat = .gcm
        let r = b.request(.fcm(Self.fcm), tags: "username:alice", authorization: "SAS", now: Self.now)
        #expect(r.url.hasSuffix("?api-version=2015-01"))
        #expect(headers(r)[2] == "ServiceBusNotification-Format: gcm")
        #expect(text(r.body) == #"{"data":{"message":"From bob: hi"}}"#)
    }

    @Test func legacyGCMMapsAndroidOptions() {
        let message: JSONValue = .object([
            ("notification", .object([("title", .string("T"))])),
            ("android", .object([("collapse_key", .string("k")), ("priority", .string("HIGH")), ("ttl", .string("60s"))])),
            ("data", .object([("message", .string("m"))])),
        ])
        #expect(text(AzureHubRequest.legacyGCMBody(message)) ==
                #"{"data":{"message":"m"},"notification":{"title":"T"},"collapse_key":"k","priority":"high","time_to_live":60}"#)
    }

    @Test func windowsUsesXMLAndTheWNSType() {
        let r = Self.builder.request(.wns(WNSNotification(body: Array(Self.toast.utf8), ttlSeconds: 30)),
                                     tags: "username:alice", authorization: "SAS", now: Self.now)
        #expect(r.url.hasSuffix("/myhub/messages/?api-version=2015-01"))
        #expect(headers(r) == [
            "Authorization: SAS", "Content-Type: application/xml",
            "ServiceBusNotification-Format: windows", "ServiceBusNotification-Tags: username:alice",
            "X-WNS-Type: wns/toast", "X-WNS-TTL: 30",
        ])
        #expect(text(r.body) == Self.toast)
    }

    @Test func windowsRawIsOctetStream() {
        let r = Self.builder.request(.wns(WNSNotification(body: [1, 2], type: "wns/raw")), tags: nil,
                                     authorization: "SAS", now: Self.now)
        #expect(headers(r).contains("Content-Type: application/octet-stream"))
        #expect(headers(r).contains("X-WNS-Type: wns/raw"))
    }

    @Test func broadcastOmitsTheTagsHeader() {
        for n: RenderedNotification in [.apns(Self.apple), .fcm(Self.fcm), .wns(WNSNotification(body: [0x3C]))] {
            let r = Self.builder.request(n, tags: nil, authorization: "SAS", now: Self.now)
            #expect(!r.headers.contains { $0.0 == "ServiceBusNotification-Tags" })
        }
    }

    @Test func configuredAPIVersionOverridesEveryFormat() {
        var b = Self.builder
        b.apiVersion = "2020-06"
        #expect(b.url(for: .fcmV1) == "https://ns.servicebus.windows.net/myhub/messages/?api-version=2020-06")
        #expect(b.url(for: .apple) == "https://ns.servicebus.windows.net/myhub/messages/?api-version=2020-06")
    }
}
