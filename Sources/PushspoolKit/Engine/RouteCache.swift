import PushspoolCore

/// What a device's platform and app resolve to in one run: its platform's rendition, its app's
/// rate limiter and the provider it goes through. Looked up in the plan's and the routes'
/// dictionaries once per (platform, app) and then found by a short scan: hashing a platform's
/// name and an app's id for every device cost about 1,000 instructions per target.
struct RouteCache {
    /// A class: each device's lookup hands out a reference, where a struct was copied (its
    /// rendition with every language's notification) and destroyed again per target, about
    /// 850 instructions a device.
    final class Route {
        let platform: Platform
        let app: String
        let rendition: SendPlan.Rendition?
        let limiter: RateLimiter?
        let state: ProviderState?

        init(platform: Platform, app: String, rendition: SendPlan.Rendition?, limiter: RateLimiter?, state: ProviderState?) {
            self.platform = platform
            self.app = app
            self.rendition = rendition
            self.limiter = limiter
            self.state = state
        }
    }
    private var routes: [Route] = []

    /// The route of `app`'s `platform` (its fields nil where the plan or the config has none).
    mutating func route(_ platform: Platform, app: String, plan: SendPlan, apps: AppRoutes) -> Route {
        for route in routes where route.platform == platform && route.app == app { return route }
        let configured = apps.apps[app]
        let route = Route(platform: platform, app: app, rendition: plan.renditions[platform],
                          limiter: configured?.limiter, state: configured?.routes[platform])
        routes.append(route)
        return route
    }
}
