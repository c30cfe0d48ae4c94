/// The payload shape each APNs push type needs. Apple accepts a wrongly shaped payload with 200
/// and the device drops it ("Unable to decode content state"), so no answer would ever say so:
/// a raw `payload.apns` is checked against its push type here, before anything is sent. The
/// rendered payloads have these shapes by construction (a test checks that they pass).
public enum APNsPayloadShape {
    /// What is wrong with `payload` for `type`, or nil.
    public static func problem(_ type: APNsPushType, _ payload: JSONValue) -> String? {
        guard case .object = payload["aps"] ?? .null, let aps = payload["aps"] else { return "needs an aps object" }
        let alerting = aps["alert"] != nil || aps["sound"] != nil || aps["badge"] != nil
        switch type {
        case .background:
            if !isOne(aps["content-available"]) || alerting {
                return "push_type \"background\" needs aps.content-available 1 and no alert, sound or badge"
            }
        case .widgets:
            if aps["content-changed"] != .bool(true) { return "push_type \"widgets\" needs aps.content-changed true" }
        case .liveactivity:
            guard let event = aps["event"]?.stringValue.flatMap(LiveActivity.Event.init(rawValue:)) else {
                return "push_type \"liveactivity\" needs aps.event start, update or end"
            }
            guard case .int? = aps["timestamp"] else { return "push_type \"liveactivity\" needs aps.timestamp in UNIX seconds" }
            if event != .end, case .object? = aps["content-state"] {} else if event != .end {
                return "a Live Activity \(event.rawValue) needs aps.content-state (an object)"
            }
            if event != .end && aps["dismissal-date"] != nil { return "aps.dismissal-date is for a Live Activity end only" }
            if event == .start && (aps["attributes-type"]?.stringValue == nil || aps["attributes"] == nil || aps["alert"] == nil) {
                return "a Live Activity start needs aps.attributes-type, aps.attributes and aps.alert"
            }
        default:
            break
        }
        return nil
    }

    private static func isOne(_ value: JSONValue?) -> Bool {
        switch value {
        case .int(1)?, .double(1)?: return true
        default: return false
        }
    }
}
