import Foundation

/// `register` and `unregister` jobs. In these kinds the `id` field is the *installation* id (the
/// registry key, as in Notification Hubs installations), not the job id: the job id then always
/// defaults to the file name, and the result log is `results/<file name without .json>.jsonl`.
extension JobParser {
    static func parseRegister(_ pairs: [(String, JSONValue)], file: String, problems: inout Problems) -> Job? {
        // The handle check depends on the platform, wherever `platform` is written.
        let platformHint = pairs.first { $0.0 == "platform" }?.1.stringValue.flatMap(Platform.init(name:))
        var installation: String?
        var platform: Platform?
        var handle: String?
        var tags: [String] = []
        var lang: LanguageTag?
        var sawPlatform = false, sawHandle = false
        for (key, value) in pairs {
            switch key {
            case "kind":
                break
            case "id":
                installation = installationID(value, problems: &problems)
            case "platform":
                sawPlatform = true
                if let name = string(value, "platform", problems: &problems) {
                    platform = Platform(name: name)
                    if platform == nil {
                        problems.add("platform", "unknown platform \(quoted(name)) (expected \(Platform.acceptedNames))")
                    }
                }
            case "handle":
                sawHandle = true
                handle = registrationHandle(value, platform: platformHint, problems: &problems)
            case "tags":
                guard case .array(let items) = value else {
                    problems.add("tags", "must be an array of tags, got \(value.typeName)")
                    continue
                }
                for (i, item) in items.enumerated() {
                    if let t = tag(item, "tags[\(i)]", problems: &problems), !tags.contains(t) { tags.append(t) }
                }
            case "lang":
                lang = language(value, "lang", problems: &problems)
            default:
                Fields.misplaced(key, kind: "register", problems: &problems)
            }
        }
        if !sawPlatform { problems.add("platform", "required (one of \(Platform.acceptedNames))") }
        if !sawHandle { problems.add("handle", "required (the device token or channel URI)") }
        let id = fileNameID(file, problems: &problems)
        guard problems.isEmpty, let platform, let handle else { return nil }
        let registration = Registration(id: installation, platform: platform, handle: handle, tags: tags, lang: lang)
        return Job(id: id, file: file, kind: .register(registration))
    }

    static func parseUnregister(_ pairs: [(String, JSONValue)], file: String, problems: inout Problems) -> Job? {
        var target: Unregistration?
        var given: [String] = []
        for (key, value) in pairs {
            switch key {
            case "kind":
                break
            case "id", "handle":
                if let first = given.first {
                    problems.add(key, "not allowed together with \(first) (give exactly one of id, handle)")
                }
                given.append(key)
                if key == "id" {
                    target = installationID(value, problems: &problems).map(Unregistration.id)
                } else {
                    target = registrationHandle(value, platform: nil, problems: &problems).map(Unregistration.handle)
                }
            default:
                Fields.misplaced(key, kind: "unregister", problems: &problems)
            }
        }
        if given.isEmpty { problems.add("", "one of id or handle is required") }
        let id = fileNameID(file, problems: &problems)
        guard problems.isEmpty, let target else { return nil }
        return Job(id: id, file: file, kind: .unregister(target))
    }

    /// A BCP 47 language tag, canonicalized (`pt-br` → `pt-BR`).
    static func language(_ value: JSONValue, _ field: String, problems: inout Problems) -> LanguageTag? {
        guard let s = string(value, field, problems: &problems) else { return nil }
        guard let tag = LanguageTag(s) else {
            problems.add(field, "\(quoted(s)) is not \(LanguageTag.rule)")
            return nil
        }
        return tag
    }

    /// Installation ids are the registry's keys and appear in result logs: printable, no spaces.
    static func installationID(_ value: JSONValue, problems: inout Problems) -> String? {
        guard let s = string(value, "id", problems: &problems) else { return nil }
        let printable = s.unicodeScalars.allSatisfy { !$0.properties.isWhitespace && $0.value >= 0x20 && $0.value != 0x7F }
        guard printable, s.utf8.count <= 128 else {
            problems.add("id", "must be an installation id of 1 to 128 bytes without spaces or control characters, got \(quoted(s))")
            return nil
        }
        return s
    }

    /// A device handle, checked lightly for its platform: the service is the judge of validity, but
    /// an obvious mix-up (a channel URI registered as an APNs token) is caught here.
    /// A `web` handle is a PushSubscription, given as an object or as its JSON text, and comes
    /// back in the registry's canonical form (compact JSON); an object handle with no platform
    /// (unregister by handle) can only be one.
    static func registrationHandle(_ value: JSONValue, platform: Platform?, problems: inout Problems) -> String? {
        if platform == .web || (platform == nil && value.typeName == "object") {
            do {
                return try WebPushSubscription.parse(value).canonicalJSON
            } catch {
                problems.add(error.field.isEmpty ? "handle" : "handle.\(error.field)", error.message)
                return nil
            }
        }
        guard let s = string(value, "handle", problems: &problems) else { return nil }
        if platform == nil, s.hasPrefix("{"), let subscription = try? WebPushSubscription.parse(text: s) {
            return subscription.canonicalJSON
        }
        guard !s.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 }) else {
            problems.add("handle", "must not contain spaces or control characters")
            return nil
        }
        if let platform, let problem = platform.handleProblem(s) {
            problems.add("handle", problem)
            return nil
        }
        return s
    }
}
