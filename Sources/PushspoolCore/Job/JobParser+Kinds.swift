/// The rules that tie a job's kind of push to its other fields (README "Kinds of push"), checked
/// once every field is read, so the order fields are written in does not matter. Each broken
/// rule is one problem naming the field at fault and the rule, the way Apple, Google or
/// Microsoft would refuse it, but before anything is sent.
extension JobParser {
    /// What `checkKinds` needs to know of the rest of the job.
    struct KindContext {
        var message: Message
        var pns: [Platform]?
        /// Which keys the job wrote (some rules are about a field being present at all).
        var written: Set<String>
        /// The service audience written and well-formed (`fcm_topic`, …), if any.
        var serviceAudience: String?
        /// A secure job: its text, title and the like are fetched, never pushed.
        var secure = false
    }

    static func checkKinds(_ c: KindContext, problems: inout Problems) {
        let type = c.message.native.pushType
        let pns = c.pns ?? []
        let named = "push_type \"\(type.rawValue)\""
        if c.written.contains("push_type"), c.pns != nil, !pns.contains(.apns) {
            problems.add("push_type", "applies to APNs only, and pns does not name apns")
        }
        if c.written.contains("wns_type"), c.pns != nil, !pns.contains(.wns) {
            problems.add("wns_type", "applies to WNS only, and pns does not name wns")
        }
        if c.written.contains("live_activity") && type != .liveactivity {
            problems.add("live_activity", "needs push_type \"liveactivity\"")
        }
        switch type {
        case .liveactivity:
            if !c.written.contains("live_activity") { problems.add("live_activity", "required with \(named)") }
            if pns.contains(where: { $0 != .apns }) { problems.add("pns", "a Live Activity exists on APNs only: pns must be \"apns\"") }
        case .background where c.secure:
            break   // only the id goes (at priority 5); what the push would not carry is fetched
        case .background, .widgets:
            let why = type == .background
                ? "a background push has no alert, sound or badge: put what the app reads in data"
                : "a widgets push only reloads the app's widgets"
            for field in ["message", "title", "badge", "sound", "thread_id", "interruption_level", "relevance_score"]
            where c.written.contains(field) {
                problems.add(field, "not allowed with \(named) (\(why))")
            }
            if type == .background && c.message.priority == .high {
                problems.add("priority", "\(named) always goes at priority 5 (Apple refuses 10): leave it out or use \"normal\"")
            }
            if let other = pns.first(where: { $0 != .apns && $0 != .fcm }) {
                problems.add("pns", "\(named) is a silent push: \(other.rawValue) cannot carry one (apns, and fcm as a data message, can)")
            }
        default:
            break
        }
        if let kind = c.message.native.wnsType {
            checkWNS(kind, c, problems: &problems)
        }
        if pns.contains(.wns), let tag = c.message.collapseID, tag.count > 16 {
            problems.add("collapse_id", "goes to WNS as X-WNS-Tag: at most 16 characters, got \(tag.count)")
        }
        if pns.contains(.fcm), c.message.native.image != nil, c.message.title == nil, c.message.overrides.fcm == nil {
            problems.add("image", "FCM shows an image only in a notification, which needs title")
        }
        if let audience = c.serviceAudience { checkServiceAudience(audience, c, problems: &problems) }
    }

    private static func checkWNS(_ kind: WNSKind, _ c: KindContext, problems: inout Problems) {
        if let raw = c.message.overrides.wns {
            let root = PayloadRenderer.wnsType(of: raw)
            if kind != .raw && root != kind.header {
                problems.add("payload.wns", "is a \(root) document, but wns_type is \"\(kind.rawValue)\"")
            }
        } else if kind == .badge && c.message.badge == nil {
            problems.add("badge", "required with wns_type \"badge\" (the number the badge shows)")
        }
    }

    /// An audience the service resolves is one request: one platform, one text. A broadcast
    /// channel carries Live Activity updates and ends to the activities subscribed to it (a
    /// start goes to push-to-start tokens); whether the channel is the job's app's is the
    /// registry's to say, when the job is picked up.
    private static func checkServiceAudience(_ field: String, _ c: KindContext, problems: inout Problems) {
        if field == "apns_channel" {
            if c.message.native.pushType != .liveactivity {
                problems.add(field, "needs push_type \"liveactivity\" (a broadcast channel carries Live Activity updates only)")
            } else if c.message.native.liveActivity?.event == .start {
                problems.add("live_activity.event", "a broadcast channel updates or ends the activities subscribed to it; "
                             + "start one with push-to-start tokens (to_tag/tags, token_kind pushtostart)")
            }
            // pns: a Live Activity's own rule (APNs only) covers it.
            if c.written.contains("localized") {
                problems.add("localized", "a broadcast channel is one request, so one text: leave localized out")
            }
            return
        }
        if let pns = c.pns, pns != [.fcm] {
            problems.add("pns", "an FCM \(field == "fcm_topic" ? "topic" : "condition") is an FCM audience: pns must be \"fcm\"")
        }
        if c.written.contains("localized") {
            problems.add("localized", "an FCM topic or condition is one request, so one text: leave localized out")
        }
    }

    /// Whether `platform` needs the job's `message` to say anything: not when a raw payload
    /// replaces it, nor for APNs push types that carry no alert (background, widgets, a Live
    /// Activity update or end), nor for FCM in a silent job (a data message).
    static func needsText(_ platform: Platform, _ message: Message) -> Bool {
        if message.overrides.covers(platform) { return false }
        let type = message.native.pushType
        switch platform {
        case .apns:
            if type.isSilent { return false }
            if type == .liveactivity { return message.native.liveActivity?.event == .start }
            return true
        case .fcm:
            return !type.isSilent
        case .wns:
            // A badge shows `badge`; a silent job to WNS is refused by its own rule.
            return message.native.wnsType != .badge && !type.isSilent
        case .web, .hms, .adm:
            return !type.isSilent
        }
    }
}
