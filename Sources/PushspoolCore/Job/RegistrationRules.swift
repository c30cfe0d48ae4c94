import Foundation

/// The one set of rules a registration must pass, wherever it enters: register and unregister
/// jobs, `pushspool register`/`unregister`, each `import` line, and `serve`'s registration
/// requests. Each entry point reads its own format (JSON fields, flags, an import line), hands the
/// values here as given, and reports the problems under its own field names (`FieldNames`), so
/// the same registration is accepted or refused for the same reason everywhere.
///
/// The rules: the installation id is an identifier (`Identifier.deviceIDProblem`), stored NFC-normalised and
/// in the case given; the handle passes its platform's check (`Platform.handleProblem`; a web
/// handle is a PushSubscription, stored as canonical JSON); tags are hub-syntax tags
/// (`TagExpression.isValidTag`), kept once each in the order given, at most `maxTags` of them
/// (what a notification hub keeps on an installation); `lang` is a BCP 47 tag,
/// canonicalised (`pt-br` → `pt-BR`); `tz` is an IANA zone the system's zone data knows (`ZoneName`).
public enum RegistrationRules {
    /// Field names as a caller's format spells them (the tutorial's HTTP API says "Platform",
    /// "Handle", "Tags"; the CLI `--handle`).
    public struct FieldNames: Sendable {
        public var id, platform, handle, tags, lang: String
        public var app = "app", environment = "environment", tokenKind = "token_kind", tz = "tz"

        public init(id: String, platform: String, handle: String, tags: String, lang: String) {
            self.id = id
            self.platform = platform
            self.handle = handle
            self.tags = tags
            self.lang = lang
        }

        /// Job files, import lines, the job API.
        public static let standard = FieldNames(id: "id", platform: "platform", handle: "handle", tags: "tags", lang: "lang")
        /// The tutorial's HTTP API (`{"Platform", "Handle", "Tags"}`; the id is in the path).
        public static let tutorial: FieldNames = {
            var names = FieldNames(id: "Id", platform: "Platform", handle: "Handle", tags: "Tags", lang: "Lang")
            (names.app, names.environment, names.tokenKind, names.tz) = ("App", "Environment", "TokenKind", "TimeZone")
            return names
        }()
    }

    /// One registration from its fields as given (nil: absent), every problem named by its field.
    /// `platform` and `handle` are required; `id`, `tags` and `lang` are optional.
    public static func registration(id: JSONValue?, platform: JSONValue?, handle: JSONValue?, tags: JSONValue?, lang: JSONValue?,
                                    app: JSONValue? = nil, environment: JSONValue? = nil, tokenKind: JSONValue? = nil, tz: JSONValue? = nil,
                                    names: FieldNames = .standard) -> Result<Registration, RegistrationProblems> {
        var problems = Problems()
        let installation = id.flatMap { deviceID($0, field: names.id, problems: &problems) }
        var resolved: Platform?
        if let platform {
            if let name = string(platform, names.platform, problems: &problems) {
                resolved = Platform(name: name)
                if resolved == nil {
                    problems.add(names.platform, "unknown platform \(JobParser.quoted(name)) (expected \(Platform.acceptedNames))")
                }
            }
        } else {
            problems.add(names.platform, "required (one of \(Platform.acceptedNames))")
        }
        var checkedHandle: String?
        if let handle {
            // An unknown platform still gets its handle's platform-free checks.
            checkedHandle = self.handle(handle, platform: resolved, field: names.handle, problems: &problems)
        } else {
            problems.add(names.handle, "required (the device token or channel URI)")
        }
        var tagList: [String] = []
        if let tags {
            if case .array(let items) = tags {
                for (i, item) in items.enumerated() {
                    if let t = tag(item, "\(names.tags)[\(i)]", problems: &problems), !tagList.contains(t) { tagList.append(t) }
                }
            } else {
                problems.add(names.tags, "must be an array of tags, got \(tags.typeName)")
            }
            if tagList.count > maxTags {
                problems.add(names.tags, "at most \(maxTags) tags a device (what the notification hub keeps), got \(tagList.count)")
            }
        }
        var language: LanguageTag?
        if let lang, let text = string(lang, names.lang, problems: &problems) {
            language = LanguageTag(text)
            if language == nil { problems.add(names.lang, "\(JobParser.quoted(text)) is not \(LanguageTag.rule)") }
        }
        let appID = app.flatMap { self.app($0, field: names.app, problems: &problems) }
        var env: APNsEnvironment?
        if let environment, let text = string(environment, names.environment, problems: &problems) {
            env = APNsEnvironment(name: text)
            if env == nil {
                problems.add(names.environment, "must be \"production\" or \"development\" (or \"sandbox\"), got \(JobParser.quoted(text))")
            } else if let resolved, resolved != .apns {
                problems.add(names.environment, "only APNs devices have an environment (this one is \(resolved.rawValue))")
            }
        }
        let kind = tokenKind.flatMap { self.tokenKind($0, platform: resolved, field: names.tokenKind, problems: &problems) }
        var zone: String?
        if let tz, let text = string(tz, names.tz, problems: &problems) {
            if let why = ZoneName.problem(text) { problems.add(names.tz, why) } else { zone = text }
        }
        guard problems.isEmpty, let resolved, let checkedHandle else { return .failure(RegistrationProblems(problems.items)) }
        return .success(Registration(id: installation, platform: resolved, handle: checkedHandle, tags: tagList, lang: language,
                                     app: appID, environment: env, tokenKind: kind, tz: zone))
    }

    /// Which device an unregistration names: exactly one of `id` and `handle`. A handle without a
    /// platform gets the checks every platform shares; an object (or its JSON text) is a web
    /// PushSubscription, looked up by its canonical form.
    public static func unregistration(id: JSONValue?, handle: JSONValue?, names: FieldNames = .standard) -> Result<Unregistration, RegistrationProblems> {
        var problems = Problems()
        var target: Unregistration?
        switch (id, handle) {
        case (let id?, nil):
            target = deviceID(id, field: names.id, problems: &problems).map(Unregistration.id)
        case (nil, let handle?):
            target = self.handle(handle, platform: nil, field: names.handle, problems: &problems).map { Unregistration.handle($0) }
        case (.some, .some):
            problems.add(names.handle, "not allowed together with \(names.id) (give exactly one of \(names.id), \(names.handle))")
        case (nil, nil):
            problems.add("", "one of \(names.id) or \(names.handle) is required")
        }
        guard problems.isEmpty, let target else { return .failure(RegistrationProblems(problems.items)) }
        return .success(target)
    }

    /// An app id as a registration names it (whether the config has it is the registry's check).
    static func app(_ value: JSONValue, field: String, problems: inout Problems) -> String? {
        guard let s = string(value, field, problems: &problems) else { return nil }
        if let why = AppConfig.idProblem(s) {
            problems.add(field, why)
            return nil
        }
        return s
    }

    /// `token_kind`: one of Apple's token kinds, on an APNs registration only.
    static func tokenKind(_ value: JSONValue, platform: Platform?, field: String, problems: inout Problems) -> APNsTokenKind? {
        guard let text = string(value, field, problems: &problems) else { return nil }
        guard let kind = APNsTokenKind(rawValue: text) else {
            problems.add(field, "unknown token kind \(JobParser.quoted(text)) (expected \(APNsTokenKind.names))")
            return nil
        }
        if let platform, platform != .apns {
            problems.add(field, "only APNs devices have a token kind (this one is \(platform.rawValue))")
            return nil
        }
        return kind
    }

    /// A tag of a registration: hub tag syntax, the same rule tag expressions are parsed with.
    public static func tagProblem(_ tag: String) -> String? {
        TagExpression.isValidTag(tag) ? nil : "invalid tag \(JobParser.quoted(tag)) (\(tagRule))"
    }

    /// Tags a device may have: Azure Notification Hubs keeps at most 60 on an installation.
    public static let maxTags = 60

    static let tagRule = "1-\(TagExpression.maxTagLength) characters of A-Z a-z 0-9 _ @ # . : -"

    // MARK: - Fields

    static func deviceID(_ value: JSONValue, field: String, problems: inout Problems) -> String? {
        guard let s = string(value, field, allowEmpty: true, problems: &problems) else { return nil }
        if let problem = Identifier.deviceIDProblem(s) {
            problems.add(field, problem)
            return nil
        }
        return Identifier.canonical(s)
    }

    static func tag(_ value: JSONValue, _ field: String, problems: inout Problems) -> String? {
        guard case .string(let s) = value else {
            problems.add(field, "must be a tag string, got \(value.typeName)")
            return nil
        }
        if let problem = tagProblem(s) {
            problems.add(field, problem)
            return nil
        }
        return s
    }

    /// A device handle, checked as its service would check it (the service is the judge of
    /// validity, but an obvious mix-up such as a channel URI registered as an APNs token is
    /// caught here). A `web` handle is a PushSubscription, an object or its JSON text, and comes
    /// back in the registry's canonical form; with no platform (unregister by handle) an object
    /// or a text starting with `{` can only be one.
    static func handle(_ value: JSONValue, platform: Platform?, field: String, problems: inout Problems) -> String? {
        if platform == .web || (platform == nil && value.typeName == "object") {
            do {
                return try WebPushSubscription.parse(value).canonicalJSON
            } catch {
                problems.add(error.field.isEmpty ? field : "\(field).\(error.field)", error.message)
                return nil
            }
        }
        // Empty is the platform check's to name ("must not be empty").
        guard let s = string(value, field, allowEmpty: true, problems: &problems) else { return nil }
        if platform == nil, s.hasPrefix("{"), let subscription = try? WebPushSubscription.parse(text: s) {
            return subscription.canonicalJSON
        }
        guard !s.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) else {
            problems.add(field, "must not contain spaces or control characters")
            return nil
        }
        if let platform {
            if let problem = platform.handleProblem(s) {
                problems.add(field, problem)
                return nil
            }
        } else if s.isEmpty || s.utf8.count > Platform.maxHandleBytes {
            // No platform: only what every platform's check shares.
            problems.add(field, s.isEmpty ? "must not be empty" : "longer than \(Platform.maxHandleBytes) bytes")
            return nil
        }
        return platform?.canonicalHandle(s) ?? Platform.canonicalLookupHandle(s)
    }

    static func string(_ value: JSONValue, _ field: String, allowEmpty: Bool = false, problems: inout Problems) -> String? {
        JobParser.string(value, field, allowEmpty: allowEmpty, problems: &problems)
    }
}
