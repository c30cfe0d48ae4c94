import Testing
@testable import PushspoolCore

/// RFC 8291 Appendix A's receiver keys: a real P-256 point and a 16-byte secret.
let rfcP256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
let rfcAuth = "BTBZMqHH6r4Tts7J_aSIgg"

@Suite struct WebPushSubscriptionTests {
    let endpoint = "https://fcm.googleapis.com/fcm/send/abc:def"

    var object: String {
        #"{"endpoint":"\#(endpoint)","expirationTime":null,"keys":{"auth":"\#(rfcAuth)","p256dh":"\#(rfcP256dh)"}}"#
    }

    @Test func parsesObjectAndTextToOneCanonicalForm() throws {
        let canonical = #"{"endpoint":"\#(endpoint)","keys":{"p256dh":"\#(rfcP256dh)","auth":"\#(rfcAuth)"}}"#
        let fromText = try WebPushSubscription.parse(text: "  " + object.replacingOccurrences(of: ",", with: ", "))
        #expect(fromText.canonicalJSON == canonical)
        #expect(fromText.p256dh.count == 65 && fromText.auth.count == 16)
        #expect(fromText.origin == "https://fcm.googleapis.com")
        #expect(Platform.web.handleProblem(canonical) == nil)
        #expect(Platform.web.canonicalHandle(object) == canonical)
    }

    @Test(arguments: [
        (#"{"endpoint":"http://x.example/a","keys":{"p256dh":"\#(rfcP256dh)","auth":"\#(rfcAuth)"}}"#, "endpoint: must be an https URL"),
        (#"{"keys":{"p256dh":"\#(rfcP256dh)","auth":"\#(rfcAuth)"}}"#, "endpoint: missing"),
        (#"{"endpoint":"https://x.example/a","keys":{"p256dh":"AAAA","auth":"\#(rfcAuth)"}}"#, "keys.p256dh: must be an uncompressed P-256 public key of 65 bytes, got 3"),
        (#"{"endpoint":"https://x.example/a","keys":{"p256dh":"\#(rfcP256dh)","auth":"AAAA"}}"#, "keys.auth: must be the authentication secret of 16 bytes, got 3"),
        (#"{"endpoint":"https://x.example/a","keys":{"p256dh":"\#(rfcP256dh)","auth":"!!"}}"#, "keys.auth: is not base64url"),
        (#"{"endpoint":"https://x.example/a"}"#, "keys: missing (p256dh and auth)"),
        ("abc", "a Web Push subscription must be the PushSubscription JSON {\"endpoint\":\"https://…\",\"keys\":{\"p256dh\":…,\"auth\":…}}"),
    ])
    func refusesWithTheField(text: String, expected: String) {
        #expect(Platform.web.handleProblem(text) == expected)
    }

    @Test func compressedKeyIsRefused() {
        var key = Base64URLDecoding.decode(rfcP256dh)!
        key[0] = 0x02
        let text = #"{"endpoint":"https://x.example/a","keys":{"p256dh":"\#(Base64URLDecoding.encode(key))","auth":"\#(rfcAuth)"}}"#
        #expect(Platform.web.handleProblem(text) == "keys.p256dh: must be an uncompressed P-256 public key (65 bytes starting 0x04)")
    }

    @Test func registerJobTakesObjectOrText() {
        let canonical = Platform.web.canonicalHandle(object)
        let asObject = parseJob(#"{"kind":"register","platform":"web","handle":\#(object),"tags":["u:a"]}"#)
        #expect(asObject.problems == [])
        #expect(asObject.job?.kind == .register(Registration(id: nil, platform: .web, handle: canonical, tags: ["u:a"])))
        let asText = parseJob(#"{"kind":"register","platform":"web","handle":\#(JSONValue.string(object).encodedString)}"#)
        #expect(asText.job?.kind == .register(Registration(id: nil, platform: .web, handle: canonical, tags: [])))
        let bad = parseJob(#"{"kind":"register","platform":"web","handle":{"endpoint":"https://x.example/a","keys":{"p256dh":"\#(rfcP256dh)","auth":"AA"}}}"#)
        #expect(bad.problems == ["handle.keys.auth: must be the authentication secret of 16 bytes, got 1"])
        let unregister = parseJob(#"{"kind":"unregister","handle":\#(object)}"#)
        #expect(unregister.job?.kind == .unregister(.handle(canonical)))
    }

    @Test func base64URLRoundTrips() {
        for n in 0..<20 {
            let bytes = (0..<n).map { UInt8(($0 * 37 + 11) & 0xFF) }
            #expect(Base64URLDecoding.decode(Base64URLDecoding.encode(bytes)) == bytes)
        }
    }

    @Test func rendersWebPayloadAndHeaders() throws {
        let job = sendJob(#"{"to_tag":"a","pns":["web"],"message":"hi","from":"bob","title":"T","data":{"k":"v"},"priority":"high","collapse_id":"news-1","ttl_seconds":60}"#)
        let rendered = try PayloadRenderer.render(job!.message, for: .web)
        guard case .web(let n) = rendered else { Issue.record("not web"); return }
        #expect(String(decoding: n.payload, as: UTF8.self) == #"{"title":"T","body":"From bob: hi","data":{"k":"v"}}"#)
        #expect(n.ttlSeconds == 60 && n.urgency == "high" && n.topic == "news-1")
        let plain = try PayloadRenderer.render(Message(text: "hi"), for: .web)
        #expect(plain == .web(WebPushNotification(payload: Array(#"{"body":"hi"}"#.utf8))))
    }

    @Test func refusesBadTopicAndOversizeAtParseTime() {
        let topic = parseJob(#"{"to_tag":"a","pns":["web"],"message":"hi","collapse_id":"has space"}"#)
        #expect(topic.problems.first?.hasPrefix("collapse_id: goes to Web Push as the Topic header") == true)
        let big = String(repeating: "x", count: 4000)
        let large = parseJob(#"{"to_tag":"a","pns":["web"],"message":"\#(big)"}"#)
        #expect(large.problems.first?.contains("Web Push payload is") == true)
    }
}
