import Testing
@testable import PushspoolCore

func utf8(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

func renderAPNs(_ m: Message) throws -> APNsNotification {
    guard case .apns(let n) = try PayloadRenderer.render(m, for: .apns) else { throw RenderError(field: "", message: "wrong platform") }
    return n
}

func renderFCM(_ m: Message) throws -> FCMNotification {
    guard case .fcm(let n) = try PayloadRenderer.render(m, for: .fcm) else { throw RenderError(field: "", message: "wrong platform") }
    return n
}

func renderWNS(_ m: Message) throws -> WNSNotification {
    guard case .wns(let n) = try PayloadRenderer.render(m, for: .wns) else { throw RenderError(field: "", message: "wrong platform") }
    return n
}

func renderError(_ m: Message, _ p: Platform) -> RenderError? {
    do {
        _ = try PayloadRenderer.render(m, for: p)
        return nil
    } catch {
        return error
    }
}

@Suite struct APNsRenderingTests {
    @Test(arguments: [
        (Message(text: "hi", from: "bob"), #"{"aps":{"alert":"From bob: hi"}}"#),
        (Message(text: "hi"), #"{"aps":{"alert":"hi"}}"#),
        (Message(text: "hi", from: "bob", title: "News"), #"{"aps":{"alert":{"title":"News","body":"From bob: hi"}}}"#),
        (Message(text: "hi", badge: 0, sound: "default"), #"{"aps":{"alert":"hi","badge":0,"sound":"default"}}"#),
        (Message(text: "hi", sound: "a.caf"), #"{"aps":{"alert":"hi","sound":"a.caf"}}"#),
        (Message(text: "hi", badge: 7, data: ["z": "1", "a": "2", "m": "3"]),
         #"{"aps":{"alert":"hi","badge":7},"a":"2","m":"3","z":"1"}"#),
        (Message(text: "say \"hi\"\n\\ / é 😀", from: "<b>"), #"{"aps":{"alert":"From <b>: say \"hi\"\n\\ / é 😀"}}"#),
    ])
    func payloadIsByteExact(message: Message, expected: String) throws {
        let n = try renderAPNs(message)
        #expect(utf8(n.payload) == expected)
        #expect(n.pushType == "alert")
        #expect(n.priority == 10)
    }

    @Test(arguments: [(Priority?.none, 10), (.high, 10), (.normal, 5)])
    func priorityMapsToHeader(priority: Priority?, expected: Int) throws {
        #expect(try renderAPNs(Message(text: "hi", priority: priority)).priority == expected)
    }

    @Test func ttlAndCollapseIDAreCarried() throws {
        let n = try renderAPNs(Message(text: "hi", ttlSeconds: 0, collapseID: "score"))
        #expect(n.ttlSeconds == 0)
        #expect(n.collapseID == "score")
        let plain = try renderAPNs(Message(text: "hi"))
        #expect(plain.ttlSeconds == nil && plain.collapseID == nil)
    }

    @Test func overrideReplacesPayloadAsWritten() throws {
        let override = try JSONParser.parse(#"{"aps":{"alert":{"loc-key":"K"},"mutable-content":1},"z":[1,2.5,null]}"#)
        let n = try renderAPNs(Message(text: "ignored", badge: 3, data: ["a": "b"], overrides: PayloadOverrides(apns: override)))
        #expect(utf8(n.payload) == #"{"aps":{"alert":{"loc-key":"K"},"mutable-content":1},"z":[1,2.5,null]}"#)
        #expect(n.pushType == "alert")
        #expect(n.priority == 10)
    }

    @Test(arguments: [
        (#"{"aps":{"content-available":1}}"#, "background", 5),
        (#"{"aps":{"content-available":1},"job":"sync"}"#, "background", 5),
        (#"{"aps":{"content-available":1,"sound":"x"}}"#, "alert", 10),
        (#"{"aps":{"content-available":1,"alert":"x"}}"#, "alert", 10),
        (#"{"aps":{"content-available":1,"badge":1}}"#, "alert", 10),
        (#"{"aps":{"content-available":0}}"#, "alert", 10),
    ])
    func silentOverrideGoesAsBackground(json: String, pushType: String, priority: Int) throws {
        let n = try renderAPNs(Message(text: "", overrides: PayloadOverrides(apns: try JSONParser.parse(json))))
        #expect(n.pushType == pushType)
        #expect(n.priority == priority)
    }

    @Test func sizeLimitJustUnderAndOver() throws {
        // {"aps":{"alert":"…"}} is 20 bytes around the text.
        let atLimit = try renderAPNs(Message(text: String(repeating: "x", count: 4076)))
        #expect(atLimit.payload.count == 4096)
        #expect(renderError(Message(text: String(repeating: "x", count: 4077)), .apns)
                == RenderError(field: "message", message: "APNs payload is 4097 bytes (limit 4096)"))
        let big: JSONValue = .object([("aps", .object([("alert", .string(String(repeating: "y", count: 5000)))]))])
        #expect(renderError(Message(text: "", overrides: PayloadOverrides(apns: big)), .apns)
                == RenderError(field: "payload.apns", message: "APNs payload is 5020 bytes (limit 4096)"))
    }

    @Test func reservedDataKeyIsAnError() {
        #expect(renderError(Message(text: "hi", data: ["aps": "x"]), .apns)
                == RenderError(field: "data.aps", message: "is reserved by APNs; use another key"))
    }
}

@Suite struct FCMRenderingTests {
    @Test(arguments: [
        (Message(text: "hi", from: "bob"), #"{"data":{"message":"From bob: hi"}}"#),
        (Message(text: "hi", from: "bob", title: "News"),
         #"{"notification":{"title":"News","body":"From bob: hi"},"data":{"message":"From bob: hi"}}"#),
        (Message(text: "hi", data: ["b": "2", "a": "1"]), #"{"data":{"message":"hi","a":"1","b":"2"}}"#),
        (Message(text: "hi", priority: .high), #"{"android":{"priority":"HIGH"},"data":{"message":"hi"}}"#),
        (Message(text: "hi", ttlSeconds: 3600, priority: .normal, collapseID: "c"),
         #"{"android":{"priority":"NORMAL","ttl":"3600s","collapse_key":"c"},"data":{"message":"hi"}}"#),
        (Message(text: "hi", ttlSeconds: 0), #"{"android":{"ttl":"0s"},"data":{"message":"hi"}}"#),
        (Message(text: "hi", badge: 3, sound: "x"), #"{"data":{"message":"hi"}}"#),
    ])
    func messageIsByteExact(message: Message, expected: String) throws {
        #expect(try renderFCM(message).message.encodedString == expected)
    }

    @Test func bodyWrapsMessageAndPutsTokenFirst() throws {
        let n = try renderFCM(Message(text: "hi", from: "bob"))
        #expect(utf8(RenderedNotification.fcm(n).body) == #"{"message":{"data":{"message":"From bob: hi"}}}"#)
        #expect(utf8(n.body(token: "T1")) == #"{"message":{"token":"T1","data":{"message":"From bob: hi"}}}"#)
    }

    @Test func overrideKeysMergeOverRenderedMessage() throws {
        let override = try JSONParser.parse(#"{"android":{"priority":"HIGH"},"fcm_options":{"analytics_label":"x"}}"#)
        let n = try renderFCM(Message(text: "hi", ttlSeconds: 60, overrides: PayloadOverrides(fcm: override)))
        #expect(n.message.encodedString
                == #"{"android":{"priority":"HIGH"},"data":{"message":"hi"},"fcm_options":{"analytics_label":"x"}}"#)
        let data = try JSONParser.parse(#"{"data":{"k":"v"}}"#)
        #expect(try renderFCM(Message(text: "", overrides: PayloadOverrides(fcm: data))).message.encodedString == #"{"data":{"k":"v"}}"#)
    }

    @Test(arguments: [
        (#"{"token":"x"}"#, RenderError(field: "payload.fcm.token", message: "not allowed (pushspool sets the target of each message)")),
        (#"{"condition":"'a' in topics"}"#, RenderError(field: "payload.fcm.condition", message: "not allowed (pushspool sets the target of each message)")),
        (#"{"data":{"n":1}}"#, RenderError(field: "payload.fcm.data.n", message: "must be a string, got number")),
        (#"{"data":[]}"#, RenderError(field: "payload.fcm.data", message: "must be an object of strings, got array")),
        (#"[]"#, RenderError(field: "payload.fcm", message: "must be an object, got array")),
    ])
    func badOverridesAreRefused(json: String, expected: RenderError) throws {
        #expect(renderError(Message(text: "hi", overrides: PayloadOverrides(fcm: try JSONParser.parse(json))), .fcm) == expected)
    }

    @Test func sizeLimitIsMeasuredOnEnvelopeWithoutToken() throws {
        // {"message":{"data":{"message":"…"}}} is 35 bytes around the text.
        let atLimit = try renderFCM(Message(text: String(repeating: "x", count: 4061)))
        #expect(RenderedNotification.fcm(atLimit).body.count == 4096)
        #expect(renderError(Message(text: String(repeating: "x", count: 4062)), .fcm)
                == RenderError(field: "message", message: "FCM message is 4097 bytes (limit 4096)"))
        let big = JSONValue.object([("notification", .object([("body", .string(String(repeating: "y", count: 4100)))]))])
        #expect(renderError(Message(text: "hi", overrides: PayloadOverrides(fcm: big)), .fcm)?.field == "payload.fcm")
    }

    @Test func reservedDataKeysAreErrors() {
        #expect(renderError(Message(text: "hi", data: ["google.x": "1"]), .fcm)?.field == "data.google.x")
        #expect(renderError(Message(text: "hi", data: ["message": "1"]), .fcm)?.field == "data.message")
    }
}

@Suite struct WNSRenderingTests {
    @Test(arguments: [
        (Message(text: "hi", from: "bob"),
         #"<toast><visual><binding template="ToastText01"><text id="1">From bob: hi</text></binding></visual></toast>"#),
        (Message(text: "a & b < c > d \"e\" 'f'", from: "R&D"),
         #"<toast><visual><binding template="ToastText01"><text id="1">From R&amp;D: a &amp; b &lt; c &gt; d &quot;e&quot; &apos;f&apos;</text></binding></visual></toast>"#),
        (Message(text: "hi", from: "bob", title: "<News>"),
         #"<toast><visual><binding template="ToastText02"><text id="1">&lt;News&gt;</text><text id="2">From bob: hi</text></binding></visual></toast>"#),
        (Message(text: "é😀\nx", badge: 2, data: ["k": "v"]),
         "<toast><visual><binding template=\"ToastText01\"><text id=\"1\">é😀\nx</text></binding></visual></toast>"),
    ])
    func toastIsByteExact(message: Message, expected: String) throws {
        let n = try renderWNS(message)
        #expect(utf8(n.body) == expected)
        #expect(n.type == "wns/toast")
        #expect(n.contentType == "text/xml")
    }

    @Test func ttlIsCarried() throws {
        #expect(try renderWNS(Message(text: "hi", ttlSeconds: 60)).ttlSeconds == 60)
        #expect(try renderWNS(Message(text: "hi")).ttlSeconds == nil)
    }

    @Test(arguments: [
        ("<toast><visual/></toast>", "wns/toast"),
        ("  \n<toast launch=\"x\">…</toast>", "wns/toast"),
        ("<?xml version=\"1.0\"?><!-- c --><tile><visual/></tile>", "wns/tile"),
        ("<badge value=\"3\"/>", "wns/badge"),
        ("<badge/>", "wns/badge"),
        ("<toaster/>", "wns/raw"),
        ("{\"json\":true}", "wns/raw"),
        ("plain bytes", "wns/raw"),
    ])
    func overrideTypeFromRootElement(raw: String, type: String) throws {
        let n = try renderWNS(Message(text: "ignored", overrides: PayloadOverrides(wns: raw)))
        #expect(utf8(n.body) == raw)
        #expect(n.type == type)
        #expect(n.contentType == (type == "wns/raw" ? "application/octet-stream" : "text/xml"))
    }

    @Test func sizeLimitJustUnderAndOver() throws {
        // The ToastText01 frame is 94 bytes around the text; `&` escapes to 5 bytes.
        #expect(try renderWNS(Message(text: String(repeating: "x", count: 4906))).body.count == 5000)
        #expect(renderError(Message(text: String(repeating: "x", count: 4907)), .wns)
                == RenderError(field: "message", message: "WNS payload is 5001 bytes (limit 5000)"))
        #expect(renderError(Message(text: String(repeating: "&", count: 1000)), .wns)
                == RenderError(field: "message", message: "WNS payload is 5094 bytes (limit 5000)"))
        #expect(renderError(Message(text: "", overrides: PayloadOverrides(wns: String(repeating: "r", count: 5001))), .wns)
                == RenderError(field: "payload.wns", message: "WNS payload is 5001 bytes (limit 5000)"))
    }

    @Test func controlCharactersXMLCannotCarryAreRefused() {
        #expect(renderError(Message(text: "a\u{1}b"), .wns)
                == RenderError(field: "message", message: "contains U+0001, which XML cannot carry"))
        #expect(renderError(Message(text: "ok", title: "\u{1B}"), .wns)?.field == "title")
    }

    @Test func renderErrorDescription() {
        #expect(RenderError(field: "message", message: "too big").description == "message: too big")
    }
}
