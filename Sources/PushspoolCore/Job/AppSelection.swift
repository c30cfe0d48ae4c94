/// A send job's `app`: the apps whose devices its audience is resolved among. One app id, an
/// array of them, or `"*"` (every app); absent: the default app. Whether the config has those
/// apps is checked where the config is known (`resolve`).
public enum AppSelection: Sendable, Equatable {
    case defaultApp
    case apps([String])
    case all

    /// `app` as a job file writes it; each problem names the field (`app`, `app[1]`).
    static func parse(_ value: JSONValue, problems: inout Problems) -> AppSelection {
        switch value {
        case .string("*"):
            return .all
        case .string(let id):
            if let why = AppConfig.idProblem(id) { problems.add("app", why); return .defaultApp }
            return .apps([id])
        case .array(let items) where !items.isEmpty:
            var ids: [String] = []
            for (i, item) in items.enumerated() {
                guard case .string(let id) = item else {
                    problems.add("app[\(i)]", "must be an app id, got \(item.typeName)")
                    continue
                }
                if let why = AppConfig.idProblem(id) { problems.add("app[\(i)]", why); continue }
                if !ids.contains(id) { ids.append(id) }
            }
            return .apps(ids)
        default:
            problems.add("app", "must be an app id, a non-empty array of app ids, or \"*\" (every app), got \(value.typeName)")
            return .defaultApp
        }
    }

    /// The app ids this selection names among `known` (the config's apps, `defaultApp` its
    /// default), or the one-line problem naming the first app the config does not have.
    public func resolve(known: Set<String>, defaultApp: String) -> Result<[String], JobProblem> {
        if case .apps(let ids) = self {
            for (i, id) in ids.enumerated() where !known.contains(id) {
                let field = ids.count == 1 ? "app" : "app[\(i)]"
                return .failure(JobProblem(field: field, message: "unknown app \(JSONValue.quoted(id)) (expected \(known.sorted().joined(separator: ", ")))"))
            }
        }
        return .success(ids(known: known, defaultApp: defaultApp))
    }

    /// The app ids this selection names, unchecked (`known`, sorted, for every app).
    public func ids(known: Set<String>, defaultApp: String) -> [String] {
        switch self {
        case .defaultApp: [defaultApp]
        case .all: known.sorted()
        case .apps(let ids): ids
        }
    }

    /// As the job names it, for `status` and logs: `default`, `chat`, `chat,shop`, `*`.
    public func description(defaultApp: String) -> String {
        switch self {
        case .defaultApp: defaultApp
        case .apps(let ids): ids.joined(separator: ",")
        case .all: "*"
        }
    }
}
