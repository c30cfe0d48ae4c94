import Foundation

extension JobParser {
    /// Keys FCM reserves inside `data` (a send using them is refused with INVALID_ARGUMENT).
    static let fcmReservedDataKeys: Set<String> = ["from", "notification", "message_type", "collapse_key"]

    static func isFCMReserved(_ key: String) -> Bool {
        let lower = key.lowercased()
        return fcmReservedDataKeys.contains(key) || lower.hasPrefix("google") || lower.hasPrefix("gcm")
    }

    static func parseSend(_ pairs: [(String, JSONValue)], file: String, problems: inout Problems) -> Job? {
        // Checks on `data` depend on the platforms, wherever `pns` is written: read it silently first.
        var scratch = Problems()
        let listed = pairs.first { $0.0 == "pns" }.map { platforms($0.1, problems: &scratch) } ?? []

        var id = defaultID(fileName: file)
        var idGiven = false
        var audiences: [(field: String, audience: Audience?)] = []
        var pns: [Platform]?
        var text: String?
        var message = Message(text: "")
        var notBefore: Date?
        var clocks = ClockFields()
        var spread: Int?
        var localized: [LanguageTag: LocalizedText] = [:]
        var serviceField: String?
        var apps = AppSelection.defaultApp
        var capped = false
        var tracking = TrackingFields()
        for (key, value) in pairs {
            switch key {
            case "kind":
                break
            case "id":
                idGiven = true
                if let s = string(value, "id", problems: &problems) {
                    if let problem = Identifier.jobIDProblem(s) { problems.add("id", problem) } else { id = s }
                }
            case "to_tag", "tags", "broadcast", "fcm_topic", "fcm_condition", "apns_channel":
                if case .bool(false) = value, key == "broadcast" { continue }  // false alone is no audience
                if let first = audiences.first {
                    problems.add(key, "not allowed together with \(first.field) (give exactly one of \(audienceList))")
                }
                if serviceAudiences.contains(key) {
                    let (ok, audience) = serviceAudience(key, value, problems: &problems)
                    if ok { serviceField = key }
                    audiences.append((key, audience))
                } else {
                    audiences.append((key, audience(key, value, problems: &problems)))
                }
            case _ where nativeFields.contains(key):
                nativeField(key, value, into: &message.native, problems: &problems)
            case "pns":
                pns = platforms(value, problems: &problems)
            case "message":
                text = string(value, "message", problems: &problems)
            case "from":
                message.from = string(value, "from", problems: &problems)
            case "title":
                message.title = string(value, "title", allowEmpty: true, problems: &problems)
            case "sound":
                message.sound = string(value, "sound", allowEmpty: true, problems: &problems)
            case "badge":
                message.badge = integer(value, "badge", in: 0...Int64(Int32.max), expected: "an integer from 0 to 2147483647",
                                        problems: &problems)
            case "data":
                message.data = data(value, platforms: listed, problems: &problems)
            case "spread_over_seconds":
                spread = integer(value, "spread_over_seconds", in: 1...604_800,
                                 expected: "an integer from 1 to 604800 (7 days)", problems: &problems)
            case "ttl_seconds":
                message.ttlSeconds = integer(value, "ttl_seconds", in: 0...2_419_200,
                                             expected: "an integer from 0 to 2419200 (28 days)", problems: &problems)
            case "priority":
                if let s = string(value, "priority", allowEmpty: true, problems: &problems) {
                    if let p = Priority(rawValue: s) {
                        message.priority = p
                    } else {
                        problems.add("priority", "must be \"high\" or \"normal\", got \(quoted(s))")
                    }
                }
            case "collapse_id":
                if let s = string(value, "collapse_id", problems: &problems) {
                    // It travels as the `apns-collapse-id` header: APNs refuses more than 64 bytes
                    // (BadCollapseId), and a control character would corrupt the header block.
                    if s.utf8.count > 64 {
                        problems.add("collapse_id", "must be at most 64 bytes of UTF-8, got \(s.utf8.count)")
                    } else if s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                        problems.add("collapse_id", "must not contain control characters")
                    } else {
                        message.collapseID = s
                    }
                }
            case "payload":
                message.overrides = overrides(value, problems: &problems)
            case "not_before":
                if let s = string(value, "not_before", problems: &problems) {
                    if let date = RFC3339.date(from: s) {
                        notBefore = date
                    } else {
                        problems.add("not_before", "must be an RFC 3339 time with an offset, e.g. \"2026-11-22T09:00:00Z\", got \(quoted(s))")
                    }
                }
            case "localized":
                localized = localizedTexts(value, problems: &problems)
            case "app":
                apps = AppSelection.parse(value, problems: &problems)
            case "capped":
                if case .bool(let b) = value { capped = b } else { problems.add("capped", "must be true or false") }
            case "local_time", "local_date", "quiet_hours":
                clocks.take(key, value)
            case "secure", "placeholder", "track", "secure_ttl_seconds":
                tracking.take(key, value, problems: &problems)
            default:
                Fields.misplaced(key, kind: "send", problems: &problems)
            }
        }
        let (local, quiet) = clocks.check(notBefore: notBefore != nil, now: Date(), problems: &problems)
        if !idGiven && !Identifier.isValidJobID(id) {
            problems.add("id", "the file name \(quoted(file)) gives no valid default id (expected \(Identifier.jobIDRule) before .json); set \"id\"")
        }
        if audiences.isEmpty {
            problems.add("", "one of to_tag, tags or broadcast is required")
        }
        if pns == nil {
            problems.add("pns", "required (one or more of \(Platform.acceptedNames))")
        }
        if text == nil && !pairs.contains(where: { $0.0 == "message" }) {
            let uncovered = (pns ?? []).filter { needsText($0, message) }
            if uncovered == [.apns] && message.native.pushType == .liveactivity {
                problems.add("message", "required for a Live Activity start (its alert)")
            } else if !uncovered.isEmpty || (pns == nil && message.overrides == PayloadOverrides()) {
                problems.add("message", "required (a non-empty string) unless payload overrides every platform in pns")
            }
        }
        if capped, let service = serviceField {
            problems.add("capped", "not allowed with \(service) (the service resolves the audience: there is no device to count)")
        }
        tracking.check(message: message, serviceAudience: serviceField, written: Set(pairs.map(\.0)), problems: &problems)
        checkKinds(KindContext(message: message, pns: pns, written: Set(pairs.map(\.0)),
                               serviceAudience: audiences.count == 1 ? serviceField : nil, secure: tracking.secure), problems: &problems)
        if local != nil, audiences.count == 1, let field = audiences[0].audience?.serviceTarget?.field {
            problems.add("local_time", "not with fcm_\(field) (FCM resolves that audience itself, so no device's clock can be known)")
        }
        guard problems.isEmpty, let pns, audiences.count == 1, let audience = audiences[0].audience else { return nil }
        message.text = text ?? ""
        var send = SendJob(audience: audience, platforms: pns, message: message, notBefore: notBefore, localized: localized,
                           spreadOverSeconds: spread)
        send.apps = apps
        send.capped = capped
        (send.localDelivery, send.quietHours) = (local, quiet)
        (send.secure, send.placeholder, send.track, send.secureTTLSeconds) = (tracking.secure, tracking.placeholder, tracking.track, tracking.ttl)
        // Every text the job can send is rendered once here, so size limits are found now.
        for language in [nil] + send.localized.keys.sorted() {
            for platform in pns {
                do {
                    _ = try PayloadRenderer.render(send.message(in: language), for: platform, tracking: send.tracking)
                } catch {
                    problems.add(language.map { "localized.\($0).\(error.field)" } ?? error.field, error.message)
                }
            }
        }
        guard problems.isEmpty else { return nil }
        return Job(id: id, file: file, kind: .send(send))
    }

    /// `localized`: `{"<BCP 47>": {"message": "…", "title"?: "…"}, …}`. Keys are canonicalized
    /// (`pt-br` → `pt-BR`); two keys naming one language are an error, not a silent pick.
    private static func localizedTexts(_ value: JSONValue, problems: inout Problems) -> [LanguageTag: LocalizedText] {
        guard case .object(let pairs) = value, !pairs.isEmpty else {
            problems.add("localized", "must be a non-empty object of language → {\"message\", \"title\"?}, got \(describe(value))")
            return [:]
        }
        var result: [LanguageTag: LocalizedText] = [:]
        for (key, entry) in pairs {
            let field = "localized.\(key)"
            guard let language = LanguageTag(key) else {
                problems.add(field, "\(quoted(key)) is not \(LanguageTag.rule)")
                continue
            }
            if result[language] != nil {
                problems.add(field, "names \(language) again")
                continue
            }
            guard case .object(let fields) = entry else {
                problems.add(field, "must be an object with \"message\" and optionally \"title\", got \(entry.typeName)")
                continue
            }
            var text: LocalizedText?
            var title: String?
            for (name, item) in fields {
                switch name {
                case "message": text = string(item, "\(field).message", problems: &problems).map { LocalizedText(message: $0) }
                case "title": title = string(item, "\(field).title", allowEmpty: true, problems: &problems)
                default: Fields.unknown(name, among: ["message", "title"], problems: &problems, prefix: "\(field).")
                }
            }
            guard var text else {
                if !fields.contains(where: { $0.0 == "message" }) { problems.add("\(field).message", "required") }
                continue
            }
            text.title = title
            result[language] = text
        }
        return result
    }

    private static func audience(_ key: String, _ value: JSONValue, problems: inout Problems) -> Audience? {
        switch key {
        case "to_tag":
            return tag(value, "to_tag", problems: &problems).map(Audience.tag)
        case "tags":
            guard let source = string(value, "tags", problems: &problems) else { return nil }
            do {
                return .expression(try TagExpression.parse(source), source: source)
            } catch {
                problems.add("tags", "at position \(error.position): \(error.message)")
                return nil
            }
        default:
            guard case .bool = value else {
                problems.add("broadcast", "must be true or false, got \(value.typeName)")
                return nil
            }
            return .broadcast
        }
    }

    /// `data`: string → string; keys the listed platforms reserve are refused here rather than by
    /// the service, one device at a time.
    private static func data(_ value: JSONValue, platforms: [Platform], problems: inout Problems) -> [String: String] {
        guard case .object(let pairs) = value else {
            problems.add("data", "must be an object of strings, got \(value.typeName)")
            return [:]
        }
        var result: [String: String] = [:]
        for (key, item) in pairs {
            let field = "data.\(key)"
            guard case .string(let s) = item else {
                problems.add(field, "must be a string, got \(item.typeName)")
                continue
            }
            if key.isEmpty {
                problems.add("data", "keys must be non-empty")
            } else if platforms.contains(.fcm) && isFCMReserved(key) {
                problems.add(field, "is reserved by FCM (from, notification, message_type, collapse_key, google*, gcm*)")
            } else if platforms.contains(.fcm) && key == "message" {
                problems.add(field, "is where FCM carries the message text; use another key")
            } else if platforms.contains(.apns) && key == "aps" {
                problems.add(field, "is reserved by APNs; use another key")
            } else {
                result[key] = s
            }
        }
        return result
    }

    /// `payload`: raw per-platform payloads, checked for shape here and for size by the renderer.
    private static func overrides(_ value: JSONValue, problems: inout Problems) -> PayloadOverrides {
        var result = PayloadOverrides()
        guard case .object(let pairs) = value else {
            problems.add("payload", "must be an object with apns, fcm or wns, got \(value.typeName)")
            return result
        }
        for (key, item) in pairs {
            let field = "payload.\(key)"
            switch key {
            case "apns":
                guard case .object = item else { problems.add(field, "must be an object, got \(item.typeName)"); continue }
                result.apns = item
            case "fcm":
                guard case .object(let fields) = item else { problems.add(field, "must be an object, got \(item.typeName)"); continue }
                var ok = true
                for (k, _) in fields where PayloadRenderer.fcmTargetKeys.contains(k) {
                    problems.add("\(field).\(k)", "not allowed (pushspool sets the target of each message)")
                    ok = false
                }
                if let d = item["data"] {
                    if case .object(let entries) = d {
                        for (k, v) in entries where v.stringValue == nil {
                            problems.add("\(field).data.\(k)", "must be a string, got \(v.typeName)")
                            ok = false
                        }
                    } else {
                        problems.add("\(field).data", "must be an object of strings, got \(d.typeName)")
                        ok = false
                    }
                }
                if ok { result.fcm = item }
            case "wns":
                if let s = string(item, field, problems: &problems) { result.wns = s }
            default:
                problems.add(field, "unknown platform payload (expected apns, fcm, wns)")
            }
        }
        return result
    }
}

extension PayloadOverrides {
    /// Whether a raw payload replaces the rendered one for `platform` (then `message` is not needed).
    /// FCM overrides are merged over the rendered message, so they cover it only if they carry
    /// their own content (data or notification).
    func covers(_ platform: Platform) -> Bool {
        switch platform {
        case .apns: return apns != nil
        case .fcm: return fcm.map { $0["data"] != nil || $0["notification"] != nil } ?? false
        case .wns: return wns != nil
        case .web, .hms, .adm: return false
        }
    }
}
