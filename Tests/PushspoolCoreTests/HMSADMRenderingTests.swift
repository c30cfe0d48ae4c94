import Foundation
import Testing
@testable import PushspoolCore

/// What a job becomes for Huawei Push Kit and Amazon Device Messaging, byte for byte, and the
/// limits each service sets.
@Suite struct HMSADMRenderingTests {
    func hms(_ m: Message, tracking: NotificationTracking = .off) throws -> HMSNotification {
        guard case .hms(let n) = try PayloadRenderer.render(m, for: .hms, tracking: tracking) else { throw RenderError(field: "t", message: "not hms") }
        return n
    }

    func adm(_ m: Message, tracking: NotificationTracking = .off) throws -> ADMNotification {
        guard case .adm(let n) = try PayloadRenderer.render(m, for: .adm, tracking: tracking) else { throw RenderError(field: "t", message: "not adm") }
        return n
    }

    func json(_ bytes: [UInt8]) throws -> JSONValue { try JSONParser.parse(bytes) }

    @Test func hmsNotificationMessageCarriesTitleClickActionAndData() throws {
        var m = Message(text: "hi", title: "Hello", data: ["k": "v"], ttlSeconds: 3600, priority: .high, collapseID: "news")
        m.native.url = "https://example.com/a"
        let body = try hms(m).body(tokens: ["t1", "t2"])
        #expect(String(decoding: body, as: UTF8.self) == #"{"validate_only":false,"message":{"notification":{"title":"Hello","body":"hi"},"# +
                #""android":{"urgency":"HIGH","ttl":"3600s","notification":{"click_action":{"type":2,"url":"https://example.com/a"},"tag":"news"}},"# +
                #""data":"{\"message\":\"hi\",\"k\":\"v\",\"url\":\"https://example.com/a\"}","token":["t1","t2"]}}"#)
    }

    @Test func hmsDataMessageWithoutTitleStartsNothingAndTakesANumericCollapseKey() throws {
        let body = try json(hms(Message(text: "x", collapseID: "7")).body(tokens: ["t"]))
        #expect(body["message"]?["notification"] == nil)
        #expect(body["message"]?["android"]?["collapse_key"] == .int(7))
        #expect(throws: RenderError(field: "collapse_id",
                                    message: "an HMS data message (no title) collapses by Huawei's collapse_key, a number from -1 to 100")) {
            try hms(Message(text: "x", collapseID: "news"))
        }
    }

    /// Huawei keeps a message 15 days at most; ADM 31 days, at least 60 s.
    @Test func lifetimesAreHeldToWhatEachServiceTakes() throws {
        for (ttl, hmsTTL, admExpiry) in [(0, "0s", 60), (600, "600s", 600), (1_296_000, "1296000s", 1_296_000), (2_419_200, "1296000s", 2_419_200)] {
            let m = Message(text: "x", ttlSeconds: ttl)
            #expect(try json(hms(m).body(tokens: ["t"]))["message"]?["android"]?["ttl"] == .string(hmsTTL), "\(ttl)")
            #expect(try json(adm(m).body)["expiresAfter"] == .int(Int64(admExpiry)), "\(ttl)")
        }
    }

    @Test func hmsBodyOverTheLimitWithoutTokensIsRefusedWithItsSize() throws {
        let fits = try hms(Message(text: String(repeating: "a", count: 1800)))
        #expect(fits.bodyBytes <= HMSNotification.maxBodyBytes)
        // Tokens are not counted: a thousand of them add nothing to the checked size.
        #expect(fits.body(tokens: Array(repeating: String(repeating: "t", count: 100), count: 1000)).count > HMSNotification.maxBodyBytes)
        do {
            _ = try hms(Message(text: String(repeating: "a", count: 5000)))
            Issue.record("an oversized HMS message rendered")
        } catch let error as RenderError {
            #expect(error.field == "message")
            #expect(error.message.hasPrefix("HMS message body is 50"))
            #expect(error.message.hasSuffix("bytes without its tokens (limit 4096)"))
        }
    }

    @Test func hmsTrackedAndSecurePushesCarryTheirIdInData() throws {
        let id = NotificationIDText(Array(String(repeating: "A", count: NotificationID.textLength).utf8))!
        let tracked = try hms(Message(text: "hi", title: "T"), tracking: .tracked)
        let stamped = RenderedNotification.hms(tracked).stamped(id)
        guard case .hms(let s) = stamped else { Issue.record("not hms"); return }
        let data = try json(s.body(tokens: ["t"]))["message"]?["data"]?.stringValue ?? ""
        #expect(try json(Array(data.utf8))["notification_id"]?.stringValue == String(repeating: "A", count: NotificationID.textLength))
        #expect(try json(Array(data.utf8))["message"]?.stringValue == "hi")
        // Two devices' ids make two messages: they never share one request.
        let other = NotificationIDText(Array(String(repeating: "B", count: NotificationID.textLength).utf8))!
        guard case .hms(let o) = RenderedNotification.hms(tracked).stamped(other) else { return }
        #expect(!s.sendsLike(o))

        let secure = try hms(Message(text: "secret text", title: "secret title", ttlSeconds: 60), tracking: .secure(placeholder: nil))
        guard case .hms(let sec) = RenderedNotification.hms(secure).stamped(id) else { return }
        let text = String(decoding: sec.body(tokens: ["t"]), as: UTF8.self)
        #expect(!text.contains("secret"))
        #expect(text == #"{"validate_only":false,"message":{"android":{"ttl":"60s"},"data":"{\"secureId\":\"\#(String(repeating: "A", count: NotificationID.textLength))\"}","token":["t"]}}"#)
    }

    @Test func admCarriesStringsOnlyWithConsolidationKeyAndExpiry() throws {
        var m = Message(text: "hi", title: "Hello", data: ["k": "v"], ttlSeconds: 10, collapseID: "news")
        m.native.url = "https://example.com"
        let n = try adm(m)
        #expect(String(decoding: n.body, as: UTF8.self) ==
                #"{"consolidationKey":"news","expiresAfter":60,"data":{"message":"hi","k":"v","url":"https://example.com","title":"Hello"}}"#)
    }

    @Test func admDataOverSixKilobytesIsRefusedWithItsSize() throws {
        _ = try adm(Message(text: String(repeating: "a", count: 6000)))
        #expect(throws: RenderError(field: "message", message: "ADM data is 6614 bytes (limit 6144)")) {
            try adm(Message(text: String(repeating: "a", count: 6600)))
        }
    }

    @Test func admTrackedAndSecurePushesCarryTheirIdInData() throws {
        let idText = String(repeating: "C", count: NotificationID.textLength)
        let id = NotificationIDText(Array(idText.utf8))!
        guard case .adm(let t) = RenderedNotification.adm(try adm(Message(text: "hi"), tracking: .tracked)).stamped(id) else { return }
        #expect(try json(t.body)["data"]?["notification_id"]?.stringValue == idText)
        #expect(try json(t.body)["data"]?["message"]?.stringValue == "hi")
        guard case .adm(let s) = RenderedNotification.adm(try adm(Message(text: "secret", collapseID: "c"), tracking: .secure(placeholder: nil))).stamped(id) else { return }
        #expect(String(decoding: s.body, as: UTF8.self) == #"{"consolidationKey":"c","data":{"secureId":"\#(idText)"}}"#)
    }

    @Test func handlesAreCheckedPerPlatform() {
        #expect(Platform.hms.handleProblem("IQAAAACy0kYSAAD") == nil)
        #expect(Platform.hms.handleProblem("a b") != nil)
        #expect(Platform.adm.handleProblem("amzn1.adm-registration.v3.Y29t+/=") != nil)
        #expect(Platform.adm.handleProblem("amzn1.adm-registration.v3.Y29t+=") == nil)
        #expect(Platform.adm.handleProblem("../x") != nil)
        #expect(Platform(name: "hms") == .hms && Platform(name: "adm") == .adm)
    }
}
