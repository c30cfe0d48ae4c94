/// Maps a platform-neutral `Message` to each platform's native notification, byte for byte
/// predictable (README "Dropping jobs": default payloads). Pure: the engine renders once per job and platform and
/// shares the result across every device of that platform.
public enum PayloadRenderer {
    /// Renders `message` in `platform`'s native format (called once per job and platform). Checks size limits.
    public static func render(_ message: Message, for platform: Platform) throws(RenderError) -> RenderedNotification {
        switch platform {
        case .apns: return .apns(try renderAPNs(message))
        case .fcm: return .fcm(try renderFCM(message))
        case .wns: return .wns(try renderWNS(message))
        case .web: return .web(try renderWeb(message))
        }
    }

    /// APNs: `{"aps":{"alert":…,"badge":…,"sound":…},<data keys sorted>}`, or `payload.apns` as written.
    static func renderAPNs(_ message: Message) throws(RenderError) -> APNsNotification {
        var priority = message.priority == .normal ? 5 : 10
        var pushType = "alert"
        let payload: JSONValue
        let field: String
        if let override = message.overrides.apns {
            guard case .object = override else {
                throw RenderError(field: "payload.apns", message: "must be an object, got \(override.typeName)")
            }
            payload = override
            field = "payload.apns"
            // A silent push (content-available only) must go as `background` with priority 5:
            // APNs rejects priority 10 for it, and `alert` would not match the payload.
            if let aps = override["aps"], isContentAvailable(aps["content-available"]),
               aps["alert"] == nil, aps["sound"] == nil, aps["badge"] == nil {
                pushType = "background"
                priority = 5
            }
        } else {
            var aps: [(String, JSONValue)] = []
            if let title = message.title {
                aps.append(("alert", .object([("title", .string(title)), ("body", .string(message.displayText))])))
            } else {
                aps.append(("alert", .string(message.displayText)))
            }
            if let badge = message.badge { aps.append(("badge", .int(Int64(badge)))) }
            if let sound = message.sound { aps.append(("sound", .string(sound))) }
            var pairs: [(String, JSONValue)] = [("aps", .object(aps))]
            for key in message.data.keys.sorted() {
                guard key != "aps" else {
                    throw RenderError(field: "data.aps", message: "is reserved by APNs; use another key")
                }
                pairs.append((key, .string(message.data[key] ?? "")))
            }
            payload = .object(pairs)
            field = "message"
        }
        let bytes = payload.encoded()
        guard bytes.count <= APNsNotification.maxPayloadBytes else {
            throw RenderError(field: field,
                              message: "APNs payload is \(bytes.count) bytes (limit \(APNsNotification.maxPayloadBytes))")
        }
        return APNsNotification(payload: bytes, pushType: pushType, priority: priority,
                                ttlSeconds: message.ttlSeconds, collapseID: message.collapseID)
    }

    private static func isContentAvailable(_ value: JSONValue?) -> Bool {
        switch value {
        case .int(1): return true
        case .double(1): return true
        default: return false
        }
    }
}
