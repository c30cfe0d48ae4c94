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
    /// What a tracked rendering holds where each device's id goes (`RenderedNotification.stamped`
    /// puts it there): as long as an id, and of characters that are no id's (`~` is not
    /// base64url) and that neither JSON nor XML escapes, so it is found byte for byte.
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
                return .apns(APNsNotification(payload: payload.encoded(), pushType: "alert", priority: message.priority == .normal ? 5 : 10,
                                              ttlSeconds: message.ttlSeconds, collapseID: message.collapseID))
            }
            let payload = JSONValue.object([("aps", .object([("content-available", .int(1))])), ("secureId", slot)])
            return .apns(APNsNotification(payload: payload.encoded(), pushType: "background", priority: 5,
                                          ttlSeconds: message.ttlSeconds, collapseID: message.collapseID))
        case .fcm:
            var pairs: [(String, JSONValue)] = []
            var android: [(String, JSONValue)] = []
            if let priority = message.priority { android.append(("priority", .string(priority == .high ? "HIGH" : "NORMAL"))) }
            if let ttl = message.ttlSeconds { android.append(("ttl", .string("\(ttl)s"))) }
            if let collapse = message.collapseID { android.append(("collapse_key", .string(collapse))) }
            if !android.isEmpty { pairs.append(("android", .object(android))) }
            pairs.append(("data", .object([("secureId", slot)])))
            return .fcm(FCMNotification(message: .object(pairs)))
        case .wns:
            return .wns(WNSNotification(body: Array(idSlot.utf8), type: "wns/raw", ttlSeconds: message.ttlSeconds, tag: message.collapseID))
        case .web:
            let payload = JSONValue.object([("secureId", slot)]).encoded()
            return .web(WebPushNotification(payload: payload, ttlSeconds: message.ttlSeconds ?? WebPushNotification.defaultTTLSeconds,
                                            urgency: message.priority == .high ? "high" : "normal",
                                            topic: message.collapseID.flatMap { try? renderWeb(Message(text: "", collapseID: $0)).topic }))
        }
    }

    /// A rendered notification with the id's place added.
    private static func tracked(_ n: RenderedNotification) throws(RenderError) -> RenderedNotification {
        switch n {
        case .apns(var a):
            a.payload = withTopLevelID(a.payload)
            let limit = a.pushType == "voip" ? APNsNotification.maxVoIPPayloadBytes : APNsNotification.maxPayloadBytes
            guard a.payload.count <= limit else {
                throw RenderError(field: "message", message: "APNs payload with its notification_id is \(a.payload.count) bytes (limit \(limit))")
            }
            return .apns(a)
        case .web(var w):
            w.payload = withTopLevelID(w.payload)
            w.declarativePayload = w.declarativePayload.map(withTopLevelID)
            guard w.payload.count <= WebPushNotification.maxPlaintextBytes else {
                throw RenderError(field: "message", message: "Web Push payload with its notification_id is \(w.payload.count) bytes (limit \(WebPushNotification.maxPlaintextBytes) before encryption)")
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
            let made = FCMNotification(message: .object(pairs))
            let size = JSONValue.object([("message", made.message)]).encoded().count
            guard size <= FCMNotification.maxMessageBytes else {
                throw RenderError(field: "message", message: "FCM message with its notification_id is \(size) bytes (limit \(FCMNotification.maxMessageBytes))")
            }
            return .fcm(made)
        case .wns(let w):
            var body = w.body
            if w.type == "wns/toast", let at = toastAttributesStart(body) {
                body.insert(contentsOf: Array(" launch=\"\(idSlot)\"".utf8), at: at)
            } else if w.type == "wns/raw", body.first == UInt8(ascii: "{") {
                body = withTopLevelID(body)
            }
            return .wns(WNSNotification(body: body, type: w.type, ttlSeconds: w.ttlSeconds, tag: w.tag))
        }
    }

    /// `{…}` → `{…,"notification_id":"<slot>"}` (`{}` → `{"notification_id":…}`).
    private static func withTopLevelID(_ object: [UInt8]) -> [UInt8] {
        guard object.last == UInt8(ascii: "}") else { return object }
        var out = Array(object.dropLast())
        if out.count > 1 { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: "\"notification_id\":\"\(idSlot)\"}".utf8)
        return out
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
    /// (or one hub send). The slot and the id are the same length: every other byte stays put.
    public func stamped(_ id: String) -> RenderedNotification { stamped(utf8: Array(id.utf8)) }

    public func stamped(utf8 id: [UInt8]) -> RenderedNotification {
        guard id.count == IDSlot.bytes.count else { return self }
        switch self {
        case .apns(var a):
            a.payload = IDSlot.put(id, into: a.payload)
            return .apns(a)
        case .web(var w):
            w.payload = IDSlot.put(id, into: w.payload)
            w.declarativePayload = w.declarativePayload.map { IDSlot.put(id, into: $0) }
            return .web(w)
        case .wns(let w):
            return .wns(WNSNotification(body: IDSlot.put(id, into: w.body), type: w.type, ttlSeconds: w.ttlSeconds, tag: w.tag))
        case .fcm(let f):
            return .fcm(f.stamped(id))
        }
    }
}

/// Where a tracked rendering's id goes, and putting one there.
enum IDSlot {
    static let bytes = Array(PayloadRenderer.idSlot.utf8)

    /// `bytes` with every occurrence of the slot replaced by `id` (of the slot's length).
    static func put(_ id: [UInt8], into bytes: [UInt8]) -> [UInt8] {
        let slot = Self.bytes
        var out = bytes
        var i = 0
        let last = out.count - slot.count
        while i <= last {
            if out[i] == slot[0] && out[i + slot.count - 1] == slot[slot.count - 1], out[i..<(i + slot.count)].elementsEqual(slot) {
                out.replaceSubrange(i..<(i + slot.count), with: id)
                i += slot.count
            } else {
                i += 1
            }
        }
        return out
    }
}

extension JSONValue {
    /// Every string value equal to `old` replaced by `new`.
    func replacingString(_ old: String, with new: String) -> JSONValue {
        switch self {
        case .string(let s): return s == old ? .string(new) : self
        case .array(let items): return .array(items.map { $0.replacingString(old, with: new) })
        case .object(let pairs): return .object(pairs.map { ($0.0, $0.1.replacingString(old, with: new)) })
        default: return self
        }
    }
}
