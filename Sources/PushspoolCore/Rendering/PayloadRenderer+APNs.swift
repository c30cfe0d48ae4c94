import Foundation

extension PayloadRenderer {
    /// APNs, shaped by the push type (README "Kinds of push"; the rules and where Apple states
    /// them: Providers.md):
    /// - alert and the PushKit-style types: `{"aps":{"alert":…,"badge":…,"sound":…,"thread-id":…,
    ///   "interruption-level":…,"relevance-score":…},"url":…,<data keys sorted>}`;
    /// - background: `{"aps":{"content-available":1},<data>}`, always priority 5;
    /// - widgets: `{"aps":{"content-changed":true},<data>}`;
    /// - liveactivity: `aps` carries `timestamp`, `event`, `content-state`, `stale-date`,
    ///   `dismissal-date`, `relevance-score`, and for `start` `attributes-type`, `attributes`, `alert`;
    /// or `payload.apns` as written. The size limit is the push type's (5 KB VoIP, else 4 KB).
    static func renderAPNs(_ message: Message, now: Date = Date()) throws(RenderError) -> APNsNotification {
        let native = message.native
        var priority = message.priority == .normal ? 5 : 10
        var pushType = native.pushType
        let payload: JSONValue
        let field: String
        if let override = message.overrides.apns {
            guard case .object = override else {
                throw RenderError(field: "payload.apns", message: "must be an object, got \(override.typeName)")
            }
            payload = override
            field = "payload.apns"
            if let problem = APNsPayloadShape.problem(pushType, override) {
                throw RenderError(field: field, message: problem)
            }
            // A silent push (content-available only) must go as `background` with priority 5:
            // APNs rejects priority 10 for it, and `alert` would not match the payload.
            if pushType == .alert, let aps = override["aps"], isContentAvailable(aps["content-available"]),
               aps["alert"] == nil, aps["sound"] == nil, aps["badge"] == nil {
                pushType = .background
            }
        } else {
            var aps: [(String, JSONValue)]
            switch pushType {
            case .background:
                aps = [("content-available", .int(1))]
            case .widgets:
                aps = [("content-changed", .bool(true))]
            case .liveactivity:
                aps = liveActivityAPS(native.liveActivity, now: now)
                if !message.text.isEmpty { aps.append(("alert", alert(message))) }
                if let sound = message.sound { aps.append(("sound", .string(sound))) }
            default:
                aps = [("alert", alert(message))]
                if let badge = message.badge { aps.append(("badge", .int(Int64(badge)))) }
                if let sound = message.sound { aps.append(("sound", .string(sound))) }
                if let thread = native.threadID { aps.append(("thread-id", .string(thread))) }
                if let level = native.interruptionLevel { aps.append(("interruption-level", .string(level.rawValue))) }
                if let score = native.relevanceScore { aps.append(("relevance-score", .double(score))) }
            }
            var pairs: [(String, JSONValue)] = [("aps", .object(aps))]
            if let url = native.url { pairs.append(("url", .string(url))) }
            for key in message.data.keys.sorted() {
                guard key != "aps" else {
                    throw RenderError(field: "data.aps", message: "is reserved by APNs; use another key")
                }
                guard key != "url" || native.url == nil else {
                    throw RenderError(field: "data.url", message: "is where APNs carries url; use another key")
                }
                pairs.append((key, .string(message.data[key] ?? "")))
            }
            payload = .object(pairs)
            field = "message"
        }
        if pushType == .background { priority = 5 }
        let bytes = payload.encoded()
        let limit = pushType.payloadLimit
        guard bytes.count <= limit else {
            let kind = pushType == .alert ? "" : " (\(pushType.rawValue))"
            throw RenderError(field: field, message: "APNs payload\(kind) is \(bytes.count) bytes (limit \(limit))")
        }
        return APNsNotification(payload: bytes, pushType: pushType.rawValue, priority: priority,
                                ttlSeconds: message.ttlSeconds, collapseID: message.collapseID)
    }

    /// `"text"`, or `{"title":…,"body":…}` with a title.
    private static func alert(_ message: Message) -> JSONValue {
        guard let title = message.title else { return .string(message.displayText) }
        return .object([("title", .string(title)), ("body", .string(message.displayText))])
    }

    /// ActivityKit's keys, times as UNIX seconds.
    private static func liveActivityAPS(_ activity: LiveActivity?, now: Date) -> [(String, JSONValue)] {
        guard let activity else { return [] }
        func seconds(_ d: Date) -> JSONValue { .int(Int64(d.timeIntervalSince1970.rounded(.down))) }
        var aps: [(String, JSONValue)] = [("timestamp", seconds(activity.timestamp ?? now)), ("event", .string(activity.event.rawValue))]
        if let state = activity.contentState { aps.append(("content-state", state)) }
        if let stale = activity.staleDate { aps.append(("stale-date", seconds(stale))) }
        if let dismissal = activity.dismissalDate { aps.append(("dismissal-date", seconds(dismissal))) }
        if let score = activity.relevanceScore { aps.append(("relevance-score", .double(score))) }
        if let type = activity.attributesType { aps.append(("attributes-type", .string(type))) }
        if let attributes = activity.attributes { aps.append(("attributes", attributes)) }
        return aps
    }

    private static func isContentAvailable(_ value: JSONValue?) -> Bool {
        switch value {
        case .int(1): return true
        case .double(1): return true
        default: return false
        }
    }
}
