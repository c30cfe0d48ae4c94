import Foundation
import Testing
@testable import PushspoolCore

/// A tracked job's rendering shared by every device, each device's id written into it where it
/// is sent: the bytes written (an outbox line, a request body) are the bytes of a notification
/// rendered with that id in place, for every platform and shape, and nothing else of them moves.
@Suite struct IDTemplateTests {
    static let id = SecurePushTests.id
    static let slot = PayloadRenderer.idSlot

    @Test func idTextHoldsAnIdsCharactersInline() throws {
        let text = try #require(NotificationIDText(Array(Self.id.utf8)))
        #expect(text.text == Self.id && text.utf8 == Array(Self.id.utf8))
        #expect(NotificationIDText(Array(Self.id.utf8.dropLast())) == nil, "one character short is no id")
        #expect(NotificationIDText(Array((Self.id + "A").utf8)) == nil)
        let other = try #require(NotificationIDText(Array(Self.id.utf8.dropLast()) + [UInt8(ascii: "B")]))
        #expect(other != text && Set([text, other, text]).count == 2)
    }

    @Test func base64IntoABufferIsTheSameAsIntoAnArray() {
        for n in [0, 1, 2, 3, 33, 34, 35] {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            var out = [UInt8](repeating: 0, count: Base64URLDecoding.encodedCount(n))
            bytes.withUnsafeBytes { src in out.withUnsafeMutableBytes { Base64URLDecoding.encode(src, into: $0) } }
            #expect(out == Base64URLDecoding.encodedBytes(bytes), "\(n) bytes")
            #expect(Base64URLDecoding.decode(String(decoding: out, as: UTF8.self)) == bytes)
        }
    }

    /// (bytes, member, slot found): the id's member last, wherever the job's own text has the slot.
    static let slots: [(String, String, Int?)] = [
        (#"{"secureId":"\#(slot)"}"#, "secureId", 13),
        (#"{"a":"\#(slot)","notification_id":"\#(slot)"}"#, "notification_id", 73),
        (#"{"notification_id":"\#(slot)","b":{"notification_id":"x"}}"#, "notification_id", 20),
        (#"{"secureId":"\#(slot)"}"#, "notification_id", nil),
        (#"{"secureId":"\#(slot.dropLast())"}"#, "secureId", nil),
        ("", "secureId", nil),
    ]

    @Test(arguments: slots) func slotIsTheLastMemberHoldingIt(json: String, member: String, expected: Int?) {
        #expect(IDTemplate.slot(ofMember: member, in: Array(json.utf8)) == expected)
    }

    @Test func writtenAndStampedAreTheBytesWithTheIDInTheSlot() throws {
        let id = try #require(NotificationIDText(Array(Self.id.utf8)))
        let bytes = Array(#"{"k":"\#(Self.slot)","notification_id":"\#(Self.slot)"}"#.utf8)
        let template = IDTemplate(bytes, slot: IDTemplate.slot(ofMember: "notification_id", in: bytes))
        let expected = Array(#"{"k":"\#(Self.slot)","notification_id":"\#(Self.id)"}"#.utf8)
        #expect(template.stamped(id) == expected, "the job's own text keeps its characters")
        var out = Array("x".utf8)
        template.write(id, into: &out)
        #expect(out == Array("x".utf8) + expected)
        #expect(template.stamped(nil) == bytes && IDTemplate(bytes).stamped(id) == bytes, "no id, or no slot: as rendered")
        #expect(IDTemplate(bytes, slot: bytes.count - 10).slot == nil, "a slot that does not fit is none")
    }

    /// Every platform and shape: what a provider writes for a stamped notification is the
    /// notification rendered with the id in place, and its sizes are the rendering's.
    @Test(arguments: [NotificationTracking.tracked, .secure(placeholder: nil), .secure(placeholder: "New message")])
    func eachPlatformWritesTheIDWhereTheRenderingHasItsSlot(tracking: NotificationTracking) throws {
        let m = try SecurePushTests.message()
        let id = try #require(NotificationIDText(Array(Self.id.utf8)))
        func filled(_ b: [UInt8]) -> [UInt8] {
            Array(String(decoding: b, as: UTF8.self).replacingOccurrences(of: Self.slot, with: Self.id).utf8)
        }
        for platform in Platform.allCases {
            let rendered = try PayloadRenderer.render(m, for: platform, tracking: tracking)
            let stamped = rendered.stamped(id)
            #expect(stamped == rendered.stamped(Self.id))
            switch (rendered, stamped) {
            case (.apns(let r), .apns(let s)):
                var out: [UInt8] = []
                s.writePayload(into: &out)
                #expect(out == s.payload && s.payload == filled(r.payload) && s.payloadCount == s.payload.count)
                #expect(String(decoding: s.payload, as: UTF8.self).contains(Self.id))
            case (.fcm(let r), .fcm(let s)):
                var out: [UInt8] = []
                s.writeMessage(into: &out)
                #expect(out == s.encodedMessage && out == filled(r.encodedMessage) && s.message.encoded() == out)
                #expect(s.body(token: "t") == filled(r.body(token: "t")))
                #expect(s.envelopeBytes == JSONValue.object([("message", s.message)]).encoded().count)
                #expect(String(decoding: out, as: UTF8.self).contains(Self.id))
            case (.wns(let r), .wns(let s)):
                var out: [UInt8] = []
                s.writeBodyAsJSONString(into: &out)
                var quoted: [UInt8] = []
                JSONValue.writeString(String(decoding: s.body, as: UTF8.self), into: &quoted)
                #expect(out == quoted && s.bodyAsJSONString == quoted && s.body == filled(r.body) && s.bodyCount == s.body.count)
                #expect(String(decoding: s.body, as: UTF8.self).contains(Self.id))
            case (.web(let r), .web(let s)):
                var out: [UInt8] = []
                s.writePayload(into: &out)
                #expect(out == s.payload && s.payload == filled(r.payload))
                #expect(String(decoding: s.payload, as: UTF8.self).contains(Self.id))
            case (.hms(let r), .hms(let s)):
                #expect(s.body(tokens: ["t"]) == filled(r.body(tokens: ["t"])))
                #expect(String(decoding: s.body(tokens: ["t"]), as: UTF8.self).contains(Self.id))
            case (.adm(let r), .adm(let s)):
                var out: [UInt8] = []
                s.writeBody(into: &out)
                #expect(out == s.body && s.body == filled(r.body))
                #expect(String(decoding: s.body, as: UTF8.self).contains(Self.id))
            default:
                Issue.record("\(platform): stamping changed the platform")
            }
        }
    }

    /// A job's own text that happens to look like the slot is sent as written: only the place
    /// the renderer made gets the id.
    @Test func aJobsTextLikeTheSlotIsLeftAlone() throws {
        let job = try JobParser.parse(Array(#"{"to_tag":"a","pns":["apns","fcm","web"],"message":"m","data":{"k":"\#(Self.slot)"}}"#.utf8), fileName: "j.json")
        guard case .send(let send) = job.kind else { throw CancellationError() }
        let id = try #require(NotificationIDText(Array(Self.id.utf8)))
        guard case .apns(let a) = try PayloadRenderer.render(send.message, for: .apns, tracking: .tracked).stamped(id),
              case .fcm(let f) = try PayloadRenderer.render(send.message, for: .fcm, tracking: .tracked).stamped(id),
              case .web(let w) = try PayloadRenderer.render(send.message, for: .web, tracking: .tracked).stamped(id) else { return }
        #expect(String(decoding: a.payload, as: UTF8.self) == #"{"aps":{"alert":"m"},"k":"\#(Self.slot)","notification_id":"\#(Self.id)"}"#)
        #expect(f.message["data"]?["k"] == .string(Self.slot) && f.message["data"]?["notification_id"] == .string(Self.id))
        #expect(String(decoding: w.payload, as: UTF8.self).contains(#""k":"\#(Self.slot)""#))
    }
}
