import PushspoolCore

/// Every app's routes, built once from the config: each app maps its platforms to the shared
/// `ProviderState` of the provider it names (two apps naming one provider share its connections,
/// credentials, slots and pause), and carries its own rate cap when it has one.
public struct AppRoutes: Sendable {
    public struct App: Sendable {
        public var routes: [Platform: ProviderState]
        /// `apps.<id>.max_per_second`: every request of this app takes its turn here too.
        public var limiter: RateLimiter?
        /// `apps.<id>.frequency_cap`: what a capped job may send to one of its devices.
        public var frequencyCap: FrequencyCap?

        public init(routes: [Platform: ProviderState], limiter: RateLimiter? = nil, frequencyCap: FrequencyCap? = nil) {
            self.routes = routes
            self.limiter = limiter
            self.frequencyCap = frequencyCap
        }
    }

    public let defaultApp: String
    public let apps: [String: App]

    public init(defaultApp: String, apps: [String: App]) {
        self.defaultApp = defaultApp
        self.apps = apps
    }

    /// One app (`default`) with these routes: a config without `apps`, and tests.
    public init(_ routes: [Platform: ProviderState], app: String = AppConfig.implicitID) {
        self.init(defaultApp: app, apps: [app: App(routes: routes)])
    }

    /// The default app's routes.
    public var routes: [Platform: ProviderState] { apps[defaultApp]?.routes ?? [:] }

    /// The provider `app` sends `platform` through.
    public func state(app: String, platform: Platform) -> ProviderState? { apps[app]?.routes[platform] }

    /// Each provider once, however many apps and platforms name it.
    public var providers: [ProviderState] {
        var seen: Set<ObjectIdentifier> = [], out: [ProviderState] = []
        for id in apps.keys.sorted() {
            for platform in Platform.allCases {
                guard let state = apps[id]?.routes[platform], seen.insert(ObjectIdentifier(state)).inserted else { continue }
                out.append(state)
            }
        }
        return out
    }

    public func shutdown() { for state in providers { state.provider.shutdown() } }
}
