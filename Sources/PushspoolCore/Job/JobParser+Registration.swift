import Foundation

/// `register` and `unregister` jobs. In these kinds the `id` field is the *installation* id (the
/// registry key, as in Notification Hubs installations), not the job id: the job id then always
/// defaults to the file name, and the result log is `results/<file name without .json>.jsonl`.
/// The fields themselves are checked by `RegistrationRules`, as everywhere a registration enters.
extension JobParser {
    static func parseRegister(_ pairs: [(String, JSONValue)], file: String, problems: inout Problems) -> Job? {
        var fields: [String: JSONValue] = [:]
        for (key, value) in pairs {
            switch key {
            case "kind": break
            case "id", "platform", "handle", "tags", "lang", "app", "environment", "token_kind", "tz": fields[key] = value
            default: Fields.misplaced(key, kind: "register", problems: &problems)
            }
        }
        let result = RegistrationRules.registration(id: fields["id"], platform: fields["platform"], handle: fields["handle"],
                                                    tags: fields["tags"], lang: fields["lang"], app: fields["app"],
                                                    environment: fields["environment"], tokenKind: fields["token_kind"], tz: fields["tz"])
        if case .failure(let refused) = result { for p in refused.problems { problems.add(p.field, p.message) } }
        let id = fileNameID(file, problems: &problems)
        guard problems.isEmpty, case .success(let registration) = result else { return nil }
        return Job(id: id, file: file, kind: .register(registration))
    }

    static func parseUnregister(_ pairs: [(String, JSONValue)], file: String, problems: inout Problems) -> Job? {
        var fields: [String: JSONValue] = [:]
        for (key, value) in pairs {
            switch key {
            case "kind": break
            case "id", "handle", "app": fields[key] = value
            default: Fields.misplaced(key, kind: "unregister", problems: &problems)
            }
        }
        let result = RegistrationRules.unregistration(id: fields["id"], handle: fields["handle"])
        if case .failure(let refused) = result { for p in refused.problems { problems.add(p.field, p.message) } }
        // A handle is unique per app: `app` names where to look (an id names one device anywhere).
        let app = fields["app"].flatMap { RegistrationRules.app($0, field: "app", problems: &problems) }
        if app != nil, fields["handle"] == nil { problems.add("app", "goes with handle (an id names one device)") }
        let id = fileNameID(file, problems: &problems)
        guard problems.isEmpty, case .success(var target) = result else { return nil }
        if case .handle(let handle, _) = target, let app { target = .handle(handle, app: app) }
        return Job(id: id, file: file, kind: .unregister(target))
    }
}
