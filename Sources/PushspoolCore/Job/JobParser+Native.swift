import Foundation

/// The fields of "Every kind of push": `push_type`, `live_activity`, the per-platform native
/// fields, and the audiences a service fans out itself (`fcm_topic`, `fcm_condition`,
/// `apns_channel`). Each field is read on its own first; the rules that tie them to each other
/// and to `pns`, `message` and the rest are checked once every field is read (`checkKinds`).
extension JobParser {
    static let nativeFields: Set<String> = [
        "push_type", "live_activity", "url", "image", "analytics_label", "thread_id", "interruption_level",
        "relevance_score", "wns_type",
    ]
    /// Audiences the service resolves: parsed and checked, not sent yet (README "Kinds of push").
    static let serviceAudiences: Set<String> = ["fcm_topic", "fcm_condition", "apns_channel"]
    static let audienceList = "to_tag, tags, broadcast, fcm_topic, fcm_condition, apns_channel"

    static func nativeField(_ key: String, _ value: JSONValue, into native: inout NativeFields, problems: inout Problems) {
        switch key {
        case "push_type":
            guard let s = string(value, key, problems: &problems) else { return }
            if let t = APNsPushType(rawValue: s) { native.pushType = t } else {
                problems.add(key, "must be one of \(APNsPushType.names), got \(quoted(s))")
            }
        case "live_activity":
            native.liveActivity = liveActivity(value, problems: &problems)
        case "url", "image":
            guard let s = string(value, key, problems: &problems) else { return }
            guard s.hasPrefix("https://"), s.utf8.count > 8, !s.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
                problems.add(key, "must be an https:// URL without spaces, got \(quoted(s))")
                return
            }
            if key == "url" { native.url = s } else { native.image = s }
        case "analytics_label":
            guard let s = string(value, key, problems: &problems) else { return }
            // FCM's rule for fcm_options.analytics_label.
            if s.utf8.count <= 50 && FCMCondition.isValidTopic(s) { native.analyticsLabel = s } else {
                problems.add(key, "must be 1 to 50 of A-Z a-z 0-9 - _ . ~ %, got \(quoted(s))")
            }
        case "thread_id":
            native.threadID = string(value, key, problems: &problems)
        case "interruption_level":
            guard let s = string(value, key, problems: &problems) else { return }
            if let l = InterruptionLevel(rawValue: s) { native.interruptionLevel = l } else {
                problems.add(key, "must be one of passive, active, time-sensitive, critical, got \(quoted(s))")
            }
        case "relevance_score":
            native.relevanceScore = number(value, key, in: 0...1, expected: "a number from 0 to 1", problems: &problems)
        default:  // wns_type
            guard let s = string(value, key, problems: &problems) else { return }
            if let k = WNSKind(rawValue: s) { native.wnsType = k } else {
                problems.add(key, "must be one of toast, tile, badge, raw, got \(quoted(s))")
            }
        }
    }

    /// `fcm_topic`, `fcm_condition`, `apns_channel`: checked for shape here; nil when malformed.
    /// A channel id is Apple's base64 text (`APNsChannelID`).
    static func serviceAudience(_ key: String, _ value: JSONValue, problems: inout Problems) -> (ok: Bool, audience: Audience?) {
        guard let s = string(value, key, problems: &problems) else { return (false, nil) }
        switch key {
        case "fcm_topic":
            // FCM's v1 API takes the name without the legacy `/topics/` prefix.
            let name = s.hasPrefix("/topics/") ? String(s.dropFirst(8)) : s
            guard FCMCondition.isValidTopic(name) else {
                problems.add(key, "invalid topic \(quoted(s)) (expected \(FCMCondition.topicRule))")
                return (false, nil)
            }
            return (true, .fcmTopic(name))
        case "fcm_condition":
            if case .failure(let problem) = FCMCondition.topics(in: s) {
                problems.add(problem.field, problem.message)
                return (false, nil)
            }
            return (true, .fcmCondition(s))
        default:  // apns_channel
            guard APNsChannelID.isValid(s) else {
                problems.add(key, "invalid channel id \(quoted(s)) (\(APNsChannelID.rule))")
                return (false, nil)
            }
            return (true, .apnsChannel(s))
        }
    }

    private static func liveActivity(_ value: JSONValue, problems: inout Problems) -> LiveActivity? {
        guard case .object(let pairs) = value else {
            problems.add("live_activity", "must be an object with event, content_state, …, got \(value.typeName)")
            return nil
        }
        var event: LiveActivity.Event?
        var activity = LiveActivity(event: .update)
        var ok = true
        func date(_ item: JSONValue, _ field: String) -> Date? {
            guard let s = string(item, field, problems: &problems) else { ok = false; return nil }
            guard let d = RFC3339.date(from: s) else {
                problems.add(field, "must be an RFC 3339 time with an offset, e.g. \"2026-11-22T09:00:00Z\", got \(quoted(s))")
                ok = false
                return nil
            }
            return d
        }
        for (key, item) in pairs {
            let field = "live_activity.\(key)"
            switch key {
            case "event":
                guard let s = string(item, field, problems: &problems) else { ok = false; continue }
                event = LiveActivity.Event(rawValue: s)
                if event == nil {
                    problems.add(field, "must be start, update or end, got \(quoted(s))")
                    ok = false
                }
            case "content_state", "attributes":
                // The app's own Codable types (ContentState, the ActivityAttributes) decode them.
                guard case .object = item else {
                    let what = key == "content_state" ? "the activity's ContentState" : "the activity's attributes"
                    problems.add(field, "must be an object (\(what)), got \(item.typeName)")
                    ok = false
                    continue
                }
                if key == "content_state" { activity.contentState = item } else { activity.attributes = item }
            case "attributes_type":
                activity.attributesType = string(item, field, problems: &problems)
                if activity.attributesType == nil { ok = false }
            case "timestamp": activity.timestamp = date(item, field)
            case "stale_date": activity.staleDate = date(item, field)
            case "dismissal_date": activity.dismissalDate = date(item, field)
            case "relevance_score":
                activity.relevanceScore = number(item, field, in: 0...Double.greatestFiniteMagnitude,
                                                 expected: "a number of 0 or more", problems: &problems)
                if activity.relevanceScore == nil { ok = false }
            default:
                Fields.unknown(key, among: ["event", "content_state", "timestamp", "stale_date", "dismissal_date",
                                            "relevance_score", "attributes_type", "attributes"],
                               problems: &problems, prefix: "live_activity.")
                ok = false
            }
        }
        guard let event else {
            if !pairs.contains(where: { $0.0 == "event" }) { problems.add("live_activity.event", "required (start, update or end)") }
            return nil
        }
        activity.event = event
        let field = "live_activity"
        // A field written but refused has its own problem already: "required" would be noise.
        let written = Set(pairs.map(\.0))
        switch event {
        case .start:
            if !written.contains("content_state") { problems.add("\(field).content_state", "required for event start"); ok = false }
            if !written.contains("attributes_type") { problems.add("\(field).attributes_type", "required for event start"); ok = false }
            if !written.contains("attributes") { problems.add("\(field).attributes", "required for event start"); ok = false }
            if activity.dismissalDate != nil { problems.add("\(field).dismissal_date", "only for event end"); ok = false }
        case .update:
            if !written.contains("content_state") { problems.add("\(field).content_state", "required for event update"); ok = false }
            if activity.dismissalDate != nil { problems.add("\(field).dismissal_date", "only for event end"); ok = false }
        case .end:
            break
        }
        if event != .start {
            if activity.attributesType != nil { problems.add("\(field).attributes_type", "only for event start"); ok = false }
            if activity.attributes != nil { problems.add("\(field).attributes", "only for event start"); ok = false }
        }
        return ok ? activity : nil
    }

    /// A JSON number in `range`.
    static func number(_ value: JSONValue, _ field: String, in range: ClosedRange<Double>, expected: String,
                       problems: inout Problems) -> Double? {
        let d: Double
        switch value {
        case .int(let i): d = Double(i)
        case .double(let x): d = x
        default:
            problems.add(field, "must be \(expected), got \(value.typeName)")
            return nil
        }
        guard range.contains(d) else {
            problems.add(field, "must be \(expected), got \(value.encodedString)")
            return nil
        }
        return d
    }
}
