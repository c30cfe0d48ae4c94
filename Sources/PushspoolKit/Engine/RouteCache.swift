import PushspoolCore

/// What a device's platform and app resolve to in one run: its platform's rendition, its app's
/// rate limiter and the provider it goes through. Looked up in the plan's and the routes'
/// dictionaries once per (platform, app) and then found by a short scan: hashing a platform's
/// name and an app's id for every device cost about 1,000 instructions per target.
struct RouteCache {
    struct Route {
        let platform: Platform
        let app: String
        let rendition: SendPlan.Rendition?
        let limiter: RateLimiter?
        let state: ProviderState?
    }
    private var routes: [Route] = []

    /// The route of `app`'s `platform` (its fields nil where the plan or the config has none).
    mutating func route(_ platform: Platform, app: String, plan: SendPlan, apps: AppRoutes) -> Route {
        // By index: a `for route in routes` would copy every route it passes.
        for i in routes.indices where routes[i].platform == platform && routes[i].app == app { return routes[i] }
        let configured = apps.apps[app]
        let route = Route(platform: platform, app: app, rendition: plan.renditions[platform],
                          limiter: configured?.limiter, state: configured?.routes[platform])
        routes.append(route)
        return route
    }
}
