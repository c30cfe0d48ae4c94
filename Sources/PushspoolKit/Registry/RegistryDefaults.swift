import PushspoolCore

/// What a registration that names no app or environment gets, and what a registry made by a
/// release before apps (schema without `app`, `environment`) gives its devices when it is
/// migrated: the config's default app and its APNs provider's environment. Also the apps a
/// registration may name (empty: any app id, as for a registry opened without a config).
public struct RegistryDefaults: Sendable, Equatable {
    public var app: String
    public var environment: APNsEnvironment
    /// The apps of the config; a registration naming another is refused (`app: unknown app`).
    public var apps: Set<String>
    /// The apps whose APNs provider has another environment than the default app's: an APNs
    /// registration of such an app that names none gets its own provider's.
    public var environments: [String: APNsEnvironment]

    public init(app: String = AppConfig.implicitID, environment: APNsEnvironment = .production, apps: Set<String> = [],
                environments: [String: APNsEnvironment] = [:]) {
        self.app = app
        self.environment = environment
        self.apps = apps
        self.environments = environments.filter { $0.value != environment }
    }

    public init(_ config: Config) {
        self.init(app: config.defaultApp, environment: config.apnsEnvironment(of: config.defaultApp), apps: Set(config.apps.keys),
                  environments: Dictionary(uniqueKeysWithValues: config.apps.keys.map { ($0, config.apnsEnvironment(of: $0)) }))
    }

    /// The app a registration is stored under.
    public func app(of r: Registration) -> String { r.app ?? app }

    /// The environment an APNs registration is stored with (nil for other platforms).
    public func environment(of r: Registration) -> APNsEnvironment? {
        r.platform == .apns ? (r.environment ?? environments[app(of: r)] ?? environment) : nil
    }

    /// Why `r` cannot be stored, as `(field, message)`: an app the config does not have, or an
    /// environment or token kind on a device that is not APNs.
    public func problem(_ r: Registration) -> (field: String, message: String)? {
        if let app = r.app, let why = appProblem(app) { return ("app", why) }
        if r.environment != nil, r.platform != .apns {
            return ("environment", "only APNs devices have an environment (this one is \(r.platform.rawValue))")
        }
        if r.tokenKind != nil, r.platform != .apns {
            return ("token_kind", "only APNs devices have a token kind (this one is \(r.platform.rawValue))")
        }
        return nil
    }

    /// Why `app` is not an app of the config, or nil.
    public func appProblem(_ app: String) -> String? {
        if let why = AppConfig.idProblem(app) { return why }
        guard !apps.isEmpty, !apps.contains(app) else { return nil }
        return "unknown app \(JSONValue.quoted(app)) (expected \(apps.sorted().joined(separator: ", ")))"
    }
}
