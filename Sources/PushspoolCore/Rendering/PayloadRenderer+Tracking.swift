import Foundation

/// How a job's pushes carry notification ids (§ The app talks back).
public enum NotificationTracking: Sendable, Equatable {
    /// No id: the payload as always.
    case off
    /// `track`: the usual payload plus the id in each platform's place.
    case tracked
    /// `secure`: the id alone (`secureId`) in the tutorial's shapes; the text is fetched.
    case secure(placeholder: String?)
}

extension PayloadRenderer {
    /// What a tracked rendering holds where each device's id goes: as long as an id, and of
    /// characters that are no id's (`~` is not base64url) and that neither JSON nor XML escapes.
    /// Its place is noted once when the job is rendered (`IDTemplate`), and each device's id is
    /// written there as its push is written (`RenderedNotification.stamped`); a job's own text
    /// that looks the same is left as it is.
    public static let idSlot = String(repeating: "~", count: NotificationID.textLength)

    /// `message` for `platform` with its id's place (`idSlot`) in it: rendered once per job,
    /// platform and language, like any notification, then stamped per device.
    /// - tracked: APNs and Web Push `notification_id` at the top level, FCM `data.notification_id`,
    ///   a WNS toast's `launch` (a raw push's JSON `notification_id`; tiles and badges carry none);
    /// - secure: APNs `{"aps":{"content-available":1},"secureId":…}` as a background push
    ///   (priority 5), or with a placeholder `{"aps":{"alert":{"body":…},"mutable-content":1},
    ///   "secureId":…}` as an alert for a Notification Service Extension; FCM
    ///   `{"data":{"secureId":…}}`; WNS a `wns/raw` push whose body is the id; Web Push
    ///   `{"secureId":…}`. No text, title, data or image of the job goes out.
    public static func render(_ message: Message, for platform: Platform, tracking: NotificationTracking,
                              now: Date = Date()) throws(RenderError) -> RenderedNotification {
        switch tracking {
        case .off: return try render(message, for: platform, now: now)
        case .tracked: return try tracked(render(message, for: platform, now: now))
        case .secure(let placeholder): return secure(message, placeholder: placeholder, for: platform)
        }
    }

    private static func secure(_ message: Message, placeholder: String?, for platform: Platform) -> RenderedNotification {
        let slot = JSONValue.string(idSlot)
        switch platform {
        case .apns:
            if let placeholder {
                let payload = JSONValue.object([("aps", .object([("alert", .object([("body", .string(placeholder))])), ("mutable-content", .int(1))])),
                                                ("secureId", slot)])
                return .apns(slotted(APNsNotification(payload: payload.encoded(), pushType: "alert", priority: message.priority == .normal ? 5 : 10,
                                                      ttlSeconds: message.ttlSeconds, collapseID: message.collapseID), member: "secureId"))
            }
            let payload = JSONValue.object([("aps", .object([("content-available", .int(1))])), ("secureId", slot)])
            return .apns(slotted(APNsNotification(payload: payload.encoded(), pushType: "background", priority: 5,
                                                  ttlSeconds: message.ttlSeconds, collapseID: message.collapseID), member: "secureId"))
        case .fcm:
            var pairs: [(String, JSONValue)] = []
            var android: [(String, JSONValue)] = []
            if let priority = message.priority { android.append(("priority", .string(priority == .high ? "HIGH" : "NORMAL"))) }
            if let ttl = message.ttlSeconds { android.append(("ttl", .string("\(ttl)s"))) }
            if let collapse = message.collapseID { android.append(("collapse_key", .string(collapse))) }
            if !android.isEmpty { pairs.append(("android", .object(android))) }
            pairs.append(("data", .object([("secureId", slot)])))
            return .fcm(FCMNotification(message: .object(pairs), idMember: "secureId"))
        case .wns:
            return .wns(WNSNotification(body: Array(idSlot.utf8), idSlot: 0, type: "wns/raw", ttlSeconds: message.ttlSeconds, tag: message.collapseID))
        case .web:
            let payload = JSONValue.object([("secureId", slot)]).encoded()
            var web = WebPushNotification(payload: payload, ttlSeconds: message.ttlSeconds ?? WebPushNotification.defaultTTLSeconds,
                                          urgency: message.priority == .high ? "high" : "normal",
                                          topic: message.collapseID.flatMap { try? renderWeb(Message(text: "", collapseID: $0)).topic })
            web.rendered = IDTemplate(payload, slot: IDTemplate.slot(ofMember: "secureId", in: payload))
            return .web(web)
        case .hms:
            // A data message: `data` is the string `{"secureId":"…"}`, the slot inside it (the
            // slot's characters, like an id's, need no escaping in either JSON level).
            var pairs: [(String, JSONValue)] = []
            let android = hmsAndroid(message)
            if !android.isEmpty { pairs.append(("android", .object(android))) }
            pairs.append(("data", .string(String(decoding: JSONValue.object([("secureId", slot)]).encoded(), as: UTF8.self))))
            return .hms(HMSNotification(members: lastSlot(members(pairs))))
        case .adm:
            // consolidationKey and expiresAfter kept, nothing else of the job's.
            return .adm(admNotification(data: [("secureId", slot)], message: message, slot: "secureId"))
        }
    }

    /// A rendered notification with the id's place added.
    private static func tracked(_ n: RenderedNotification) throws(RenderError) -> RenderedNotification {
        switch n {
        case .apns(var a):
            a.rendered = withTopLevelID(a.payload)
            let limit = a.pushType == "voip" ? APNsNotification.maxVoIPPayloadBytes : APNsNotification.maxPayloadBytes
            guard a.payloadCount <= limit else {
                throw RenderError(field: "message", message: "APNs payload with its notification_id is \(a.payloadCount) bytes (limit \(limit))")
            }
            return .apns(a)
        case .web(var w):
            w.rendered = withTopLevelID(w.payload)
            w.renderedDeclarative = w.declarativePayload.map(withTopLevelID)
            guard w.rendered.count <= WebPushNotification.maxPlaintextBytes else {
                throw RenderError(field: "message", message: "Web Push payload with its notification_id is \(w.rendered.count) bytes (limit \(WebPushNotification.maxPlaintextBytes) before encryption)")
            }
            return .web(w)
        case .fcm(let f):
            guard case .object(var pairs) = f.message else { return n }
            let entry = ("notification_id", JSONValue.string(idSlot))
            if let i = pairs.firstIndex(where: { $0.0 == "data" }), case .object(var data) = pairs[i].1 {
                data.append(entry)
                pairs[i].1 = .object(data)
            } else {
                pairs.append(("data", .object([entry])))
            }
            let made = FCMNotification(message: .object(pairs), idMember: "notification_id")
            guard made.envelopeBytes <= FCMNotification.maxMessageBytes else {
                throw RenderError(field: "message", message: "FCM message with its notification_id is \(made.envelopeBytes) bytes (limit \(FCMNotification.maxMessageBytes))")
            }
            return .fcm(made)
        case .wns(let w):
            var body = w.body
            var slot: Int?
            if w.type == "wns/toast", let at = toastAttributesStart(body) {
                let attribute = Array(" launch=\"\(idSlot)\"".utf8)
                body.insert(contentsOf: attribute, at: at)
                slot = at + attribute.count - NotificationIDText.count - 1
            } else if w.type == "wns/raw", body.first == UInt8(ascii: "{") {
                let template = withTopLevelID(body)
                body = template.bytes
                slot = template.slot
            }
            return .wns(WNSNotification(body: body, idSlot: slot, type: w.type, ttlSeconds: w.ttlSeconds, tag: w.tag))
        case .hms(let h):
            // `data` (the message's last member) as a string holding `{…,"notification_id":…}`.
            var pairs: [(String, JSONValue)] = []
            if let parsed = try? JSONParser.parse(Array("{".utf8) + h.members.bytes + Array("}".utf8)), case .object(let p) = parsed { pairs = p }
            var data: [(String, JSONValue)] = []
            if let i = pairs.lastIndex(where: { $0.0 == "data" }) {
                if let text = pairs[i].1.stringValue, let d = try? JSONParser.parse(Array(text.utf8)), case .object(let o) = d { data = o }
                pairs.remove(at: i)
            }
            data.append(("notification_id", .string(idSlot)))
            pairs.append(("data", .string(String(decoding: JSONValue.object(data).encoded(), as: UTF8.self))))
            return .hms(try checkedHMS(HMSNotification(members: lastSlot(members(pairs))), field: "message"))
        case .adm(let a):
            let body = withDataMember(a.rendered.bytes, "notification_id")
            let made = ADMNotification(body: body, dataBytes: a.dataBytes + NotificationIDText.count + #","notification_id":"""#.utf8.count)
            guard made.dataBytes <= ADMNotification.maxDataBytes else {
                throw RenderError(field: "message", message: "ADM data with its notification_id is \(made.dataBytes) bytes (limit \(ADMNotification.maxDataBytes))")
            }
            return .adm(made)
        }
    }

    /// Bytes whose last `idSlot` is where the id goes (the renderer puts it after the job's own).
    private static func lastSlot(_ bytes: [UInt8]) -> IDTemplate {
        let slot = Array(idSlot.utf8)
        var i = bytes.count - slot.count
        while i >= 0 {
            if bytes[i..<(i + slot.count)].elementsEqual(slot) { return IDTemplate(bytes, slot: i) }
            i -= 1
        }
        return IDTemplate(bytes)
    }

    /// An ADM body (`{…,"data":{…}}`, `data` last) with `member` added to `data`, the slot its value.
    private static func withDataMember(_ body: [UInt8], _ member: String) -> IDTemplate {
        guard body.count >= 2, body.suffix(2).elementsEqual("}}".utf8) else { return IDTemplate(body) }
        var out = Array(body.dropLast(2))
        if out.last != UInt8(ascii: "{") { out.append(UInt8(ascii: ",")) }
        JSONValue.writeString(member, into: &out)
        out.append(contentsOf: ":\"\(idSlot)\"}}".utf8)
        return IDTemplate(out, slot: out.count - 3 - NotificationIDText.count)
    }

    /// An APNs rendering whose id goes in the value of its `member`.
    private static func slotted(_ a: APNsNotification, member: String) -> APNsNotification {
        var a = a
        a.rendered = IDTemplate(a.rendered.bytes, slot: IDTemplate.slot(ofMember: member, in: a.rendered.bytes))
        return a
    }

    /// `{…}` → `{…,"notification_id":"<slot>"}` (`{}` → `{"notification_id":…}`), the slot's place with it.
    private static func withTopLevelID(_ object: [UInt8]) -> IDTemplate {
        guard object.last == UInt8(ascii: "}") else { return IDTemplate(object) }
        var out = Array(object.dropLast())
        if out.count > 1 { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: "\"notification_id\":\"\(idSlot)\"}".utf8)
        return IDTemplate(out, slot: out.count - 2 - NotificationIDText.count)
    }

    /// Where attributes go in a toast's root element (after `<toast`), unless it has a `launch`.
    private static func toastAttributesStart(_ body: [UInt8]) -> Int? {
        let text = String(decoding: body, as: UTF8.self)
        guard let open = text.range(of: "<toast"), let close = text[open.upperBound...].firstIndex(of: ">"),
              !text[open.upperBound..<close].contains("launch=") else { return nil }
        return text.utf8.distance(from: text.startIndex, to: open.upperBound)
    }
}

extension RenderedNotification {
    /// This notification with `id` in its id's place (`PayloadRenderer.idSlot`), for one device
    /// (or one hub send); unchanged if `id` is not an id's length.
    public func stamped(_ id: String) -> RenderedNotification {
        NotificationIDText(id.utf8).map(stamped) ?? self
    }

    /// This notification with `id` in its id's place: the job's rendering, shared, and the id
    /// beside it, written in where a provider writes the payload (the slot and an id have the
    /// same length: every other byte stays put, and every size checked at rendering holds).
    /// Consuming: the caller's copy is the one stamped (no retain of the job's bytes per device).
    public consuming func stamped(_ id: NotificationIDText) -> RenderedNotification {
        switch self {
        case .apns(var a):
            a.id = id
            return .apns(a)
        case .web(var w):
            w.id = id
            return .web(w)
        case .wns(var w):
            w.id = id
            return .wns(w)
        case .fcm(let f):
            return .fcm(f.stamped(id))
        case .hms(var h):
            h.id = id
            return .hms(h)
        case .adm(var a):
            a.id = id
            return .adm(a)
        }
    }
}
