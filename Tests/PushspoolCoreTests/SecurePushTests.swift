import Foundation
import Testing
@testable import PushspoolCore

/// Secure and tracked jobs in the core: what `validate` refuses (naming the field), the
/// notification id's layout and shape checks, the constant-time comparison, and the payloads
/// each platform gets (fixtures: the tutorial's shapes).
@Suite struct SecurePushTests {
    static let to = #""to_tag":"username:alice","pns":["apns"],"message":"balance low""#

    static let refused: [(String, String, [String])] = [
        ("secure with fcm_topic", #"{"fcm_topic":"news","pns":"fcm","message":"m","secure":true}"#,
         ["secure: not allowed with fcm_topic (the service resolves that audience: no device's user could fetch the content)"]),
        ("secure with fcm_condition", #"{"fcm_condition":"'a' in topics","pns":"fcm","message":"m","secure":true}"#,
         ["secure: not allowed with fcm_condition (the service resolves that audience: no device's user could fetch the content)"]),
        ("secure with apns_channel", #"{"apns_channel":"dHN0LXNyY2gtY2hhbm5lbA==","pns":"apns","push_type":"liveactivity","live_activity":{"event":"update","content_state":{}},"secure":true}"#,
         ["secure: not allowed with apns_channel (the service resolves that audience: no device's user could fetch the content)",
          #"secure: only with push_type alert or background, got "liveactivity""#]),
        ("secure with voip", #"{\#(to),"push_type":"voip","secure":true}"#, [#"secure: only with push_type alert or background, got "voip""#]),
        ("secure with widgets", #"{\#(to),"push_type":"widgets","secure":true}"#,
         [#"secure: only with push_type alert or background, got "widgets""#,
          #"message: not allowed with push_type "widgets" (a widgets push only reloads the app's widgets)"#]),
        ("placeholder without secure", #"{\#(to),"placeholder":"New message"}"#,
         ["placeholder: only with \"secure\": true (it is what a secure push shows until its text is fetched)"]),
        ("placeholder with background", #"{\#(to),"push_type":"background","secure":true,"placeholder":"x"}"#,
         [#"placeholder: needs push_type alert (a placeholder is a visible alert), got "background""#]),
        ("secure not a boolean", #"{\#(to),"secure":"yes"}"#, ["secure: must be true or false, got string"]),
        ("track not a boolean", #"{\#(to),"track":1}"#, ["track: must be true or false, got number"]),
        ("secure_ttl_seconds without secure", #"{\#(to),"secure_ttl_seconds":60}"#, ["secure_ttl_seconds: only with \"secure\": true"]),
        ("secure_ttl_seconds zero", #"{\#(to),"secure":true,"secure_ttl_seconds":0}"#,
         ["secure_ttl_seconds: must be an integer from 1 to 7776000 (90 days), got 0"]),
        ("secure with a raw payload", #"{\#(to),"secure":true,"payload":{"apns":{"aps":{"alert":"balance low"}}}}"#,
         ["payload: not allowed with secure (a raw payload would carry the text through the provider)"]),
    ]

    static func problems(_ json: String) -> [String] {
        do {
            _ = try JobParser.parse(Array(json.utf8), fileName: "j.json")
            return []
        } catch {
            return error.problems.map { "\($0.field): \($0.message)" }
        }
    }

    @Test(arguments: refused) func validateRefusesNamingTheField(name: String, json: String, expected: [String]) {
        #expect(Self.problems(json) == expected, "\(name)")
    }

    @Test func acceptedFieldsAndDefaults() throws {
        let job = try JobParser.parse(Array(#"{\#(Self.to),"secure":true,"placeholder":"You have a message","ttl_seconds":600}"#.utf8), fileName: "j.json")
        guard case .send(let send) = job.kind else { Issue.record("not a send job"); return }
        #expect(send.secure && send.placeholder == "You have a message" && send.contentLifetime == 600)
        #expect(send.tracking == .secure(placeholder: "You have a message"))
        let plain = try JobParser.parse(Array(#"{\#(Self.to),"secure":true,"secure_ttl_seconds":90}"#.utf8), fileName: "j.json")
        if case .send(let s) = plain.kind { #expect(s.contentLifetime == 90 && s.tracking == .secure(placeholder: nil)) }
        let week = try JobParser.parse(Array(#"{\#(Self.to),"secure":true}"#.utf8), fileName: "j.json")
        if case .send(let s) = week.kind { #expect(s.contentLifetime == 7 * 24 * 3600) }
        let tracked = try JobParser.parse(Array(#"{\#(Self.to),"track":true}"#.utf8), fileName: "j.json")
        if case .send(let s) = tracked.kind { #expect(s.tracking == .tracked && !s.secure) }
        #expect(JobParser.isSecure(Array(#"{"secure": true, "message": "x"}"#.utf8)))
        #expect(!JobParser.isSecure(Array(#"{"secure": false}"#.utf8)) && !JobParser.isSecure(Array("not json".utf8)))
    }

    // MARK: Ids

    @Test func idLayoutRoundTrips() throws {
        let mac = (0..<16).map { UInt8($0 * 7) }
        let id = NotificationID(job: 0x0102030405060708, device: 42, platform: .wns, mac: mac)
        #expect(id.text.utf8.count == NotificationID.textLength && NotificationID.textLength == 46)
        let back = try #require(NotificationID.parse(id.text))
        #expect(back == id && !back.isHub)
        #expect(NotificationID.parse(NotificationID(job: 9, device: 0, platform: .fcm, mac: mac).text)?.isHub == true)
        // The MAC covers the header and the installation id.
        #expect(NotificationID.macInput(job: 1, device: 2, platform: .apns, installationID: "ab")
                == [1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 1, 0x61, 0x62])
    }

    @Test(arguments: [
        ("", "empty"), ("abc", "short"), ("+" + String(repeating: "A", count: 45), "standard alphabet"),
        (String(repeating: "A", count: 45) + "=", "padding"), (String(repeating: "A", count: 47), "long"),
        (String(repeating: "A", count: 46), "version 0, job 0"),
    ]) func malformedIDsHaveNoShape(text: String, why: String) {
        #expect(NotificationID.parse(text) == nil, "\(why)")
    }

    @Test func unknownVersionPlatformAndSecondSpellingsAreRefused() {
        let mac = [UInt8](repeating: 9, count: 16)
        let good = Array(Base64URLDecoding.decode(NotificationID(job: 5, device: 6, platform: .apns, mac: mac).text)!)
        var badVersion = good; badVersion[0] = 2
        var badPlatform = good; badPlatform[17] = 9
        #expect(NotificationID.parse(Base64URLDecoding.encode(badVersion)) == nil)
        #expect(NotificationID.parse(Base64URLDecoding.encode(badPlatform)) == nil)
        // The last character's 2 spare bits set: the same bytes, another spelling.
        var text = Array(Base64URLDecoding.encode(good).utf8)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        let last = alphabet.firstIndex(of: text[45])!
        text[45] = alphabet[last | 1]
        #expect(NotificationID.parse(String(decoding: text, as: UTF8.self)) == nil)
    }

    @Test func constantTimeComparisonLooksAtEveryByte() {
        let a: [UInt8] = Array(repeating: 1, count: 16)
        for i in 0..<16 {
            var b = a
            b[i] ^= 0x80
            #expect(!ConstantTime.equal(a, b), "differs at \(i)")
        }
        #expect(ConstantTime.equal(a, a) && !ConstantTime.equal(a, Array(a.prefix(15))))
        #expect(ConstantTime.equalMask(a[...], a) == -1 && ConstantTime.equalMask(a[...], Array(repeating: 2, count: 16)) == 0)
    }

    // MARK: Payloads

    static let id = "AQAAAAAAAAAHAAAAAAAAACoBmZmZmZmZmZmZmZmZmZmZmQ"

    static func message(_ extra: String = "") throws -> Message {
        let job = try JobParser.parse(Array(#"{"to_tag":"a","pns":["apns","fcm","wns","web"],"message":"balance low","from":"bank","title":"T","data":{"k":"v"}\#(extra)}"#.utf8), fileName: "j.json")
        guard case .send(let s) = job.kind else { throw CancellationError() }
        return s.message
    }

    @Test func secureShapes() throws {
        let m = try Self.message()
        #expect(Self.id.utf8.count == 46)
        guard case .apns(let bg) = try PayloadRenderer.render(m, for: .apns, tracking: .secure(placeholder: nil)).stamped(Self.id) else { return }
        #expect(String(decoding: bg.payload, as: UTF8.self) == #"{"aps":{"content-available":1},"secureId":"\#(Self.id)"}"#)
        #expect(bg.pushType == "background" && bg.priority == 5)
        guard case .apns(let alert) = try PayloadRenderer.render(m, for: .apns, tracking: .secure(placeholder: "New message")).stamped(Self.id) else { return }
        #expect(String(decoding: alert.payload, as: UTF8.self) == #"{"aps":{"alert":{"body":"New message"},"mutable-content":1},"secureId":"\#(Self.id)"}"#)
        #expect(alert.pushType == "alert" && alert.priority == 10)
        guard case .fcm(let fcm) = try PayloadRenderer.render(m, for: .fcm, tracking: .secure(placeholder: nil)).stamped(Self.id) else { return }
        #expect(String(decoding: fcm.body(token: "tok"), as: UTF8.self) == #"{"message":{"token":"tok","data":{"secureId":"\#(Self.id)"}}}"#)
        guard case .wns(let wns) = try PayloadRenderer.render(m, for: .wns, tracking: .secure(placeholder: nil)).stamped(Self.id) else { return }
        #expect(wns.body == Array(Self.id.utf8) && wns.type == "wns/raw")
        guard case .web(let web) = try PayloadRenderer.render(m, for: .web, tracking: .secure(placeholder: nil)).stamped(Self.id) else { return }
        #expect(String(decoding: web.payload, as: UTF8.self) == #"{"secureId":"\#(Self.id)"}"#)
        // No text of the job in any of them.
        for n in [bg.payload, alert.payload, fcm.body(token: "t"), wns.body, web.payload] {
            let s = String(decoding: n, as: UTF8.self)
            #expect(!s.contains("balance") && !s.contains("bank") && !s.contains("\"k\""))
        }
    }

    @Test func trackedPayloadsCarryTheIDInEachPlatformsPlace() throws {
        let m = try Self.message()
        guard case .apns(let a) = try PayloadRenderer.render(m, for: .apns, tracking: .tracked).stamped(Self.id) else { return }
        #expect(String(decoding: a.payload, as: UTF8.self)
                == #"{"aps":{"alert":{"title":"T","body":"From bank: balance low"}},"k":"v","notification_id":"\#(Self.id)"}"#)
        guard case .fcm(let f) = try PayloadRenderer.render(m, for: .fcm, tracking: .tracked).stamped(Self.id) else { return }
        #expect(f.message["data"]?["notification_id"] == .string(Self.id) && f.message["data"]?["message"] == .string("From bank: balance low"))
        guard case .wns(let w) = try PayloadRenderer.render(m, for: .wns, tracking: .tracked).stamped(Self.id) else { return }
        #expect(String(decoding: w.body, as: UTF8.self).hasPrefix(#"<toast launch="\#(Self.id)"><visual>"#))
        guard case .web(let web) = try PayloadRenderer.render(m, for: .web, tracking: .tracked).stamped(Self.id) else { return }
        #expect(String(decoding: web.payload, as: UTF8.self)
                == #"{"title":"T","body":"From bank: balance low","data":{"k":"v"},"notification_id":"\#(Self.id)"}"#)
        // Untracked: as before, no id.
        guard case .apns(let plain) = try PayloadRenderer.render(m, for: .apns, tracking: .off) else { return }
        #expect(!String(decoding: plain.payload, as: UTF8.self).contains("notification_id"))
    }

    @Test func contentShowsTheDevicesLanguageWithItsPrefix() {
        let c = SecureJobContent(message: "hi", from: "bob", title: "T",
                                 localized: [LanguageTag("pt")!: LocalizedText(message: "olá"), LanguageTag("fr")!: LocalizedText(message: "salut", title: "Tf")])
        #expect(c.shown(in: LanguageTag("pt-BR")) == ("T", "From bob: olá") || c.shown(in: LanguageTag("pt-BR")).message == "From bob: olá")
        #expect(c.shown(in: LanguageTag("pt-BR")).title == nil, "a localized text without a title has none")
        #expect(c.shown(in: LanguageTag("fr")).title == "Tf" && c.shown(in: nil).message == "From bob: hi")
        #expect(SecureJobContent(json: c.json) == c)
    }
}
