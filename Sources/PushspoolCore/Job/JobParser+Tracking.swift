extension JobParser {
    /// `secure`, `placeholder`, `track`, `secure_ttl_seconds` (§ The app talks back), read as
    /// written, then checked together: what cannot work is refused here, naming the field.
    struct TrackingFields {
        var secure = false
        var placeholder: String?
        var track = false
        var ttl: Int?

        mutating func take(_ key: String, _ value: JSONValue, problems: inout Problems) {
            switch key {
            case "secure":
                if case .bool(let b) = value { secure = b } else { problems.add("secure", "must be true or false, got \(value.typeName)") }
            case "track":
                if case .bool(let b) = value { track = b } else { problems.add("track", "must be true or false, got \(value.typeName)") }
            case "placeholder":
                placeholder = JobParser.string(value, "placeholder", problems: &problems)
            default:
                ttl = JobParser.integer(value, "secure_ttl_seconds", in: 1...7_776_000, expected: "an integer from 1 to 7776000 (90 days)",
                                        problems: &problems)
            }
        }

        /// A secure push is fetched by its own user: not through an audience the service resolves
        /// (no device, so no user), not as a push type that shows nothing fetchable, not with a
        /// raw payload (which would carry the text through the provider after all).
        func check(message: Message, serviceAudience: String?, written: Set<String>, problems: inout Problems) {
            if placeholder != nil && !secure {
                problems.add("placeholder", "only with \"secure\": true (it is what a secure push shows until its text is fetched)")
            }
            if written.contains("secure_ttl_seconds") && !secure {
                problems.add("secure_ttl_seconds", "only with \"secure\": true")
            }
            guard secure else { return }
            if let serviceAudience {
                problems.add("secure", "not allowed with \(serviceAudience) (the service resolves that audience: no device's user could fetch the content)")
            }
            let type = message.native.pushType
            if type != .alert && type != .background {
                problems.add("secure", "only with push_type alert or background, got \(JobParser.quoted(type.rawValue))")
            } else if type == .background && placeholder != nil {
                problems.add("placeholder", "needs push_type alert (a placeholder is a visible alert), got \"background\"")
            }
            if message.overrides != PayloadOverrides() {
                problems.add("payload", "not allowed with secure (a raw payload would carry the text through the provider)")
            }
        }
    }
}

extension JobParser {
    /// Whether a job file's bytes are a secure send job (`"secure": true`), read without
    /// validating it: its file is then written for its owner alone.
    public static func isSecure(_ bytes: [UInt8]) -> Bool {
        guard let document = try? JSONParser.members(bytes, named: ["secure"]) else { return false }
        return document["secure"] == .bool(true)
    }
}

extension SendJob {
    /// How its pushes carry notification ids, apart from its apps' `track`.
    public var tracking: NotificationTracking {
        if secure { return .secure(placeholder: placeholder) }
        return track ? .tracked : .off
    }
}
