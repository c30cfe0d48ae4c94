import Foundation
import PushspoolCore

/// The engine's send graph — providers, and the worker pool whose one attempt-and-retry path
/// they are called through — assembled here for `run`'s engine and for a hub link alike, so
/// that a command with no engine (`serve`, `register`, `unregister`, `import`, `hub sync`)
/// writes installations through the same parts `run` does.
extension EngineSetup {
    /// The worker pool for this config: its concurrency and retry policy.
    public static func workerPool(config: Config, metrics: Metrics? = nil,
                                  random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) -> WorkerPool {
        WorkerPool(concurrency: config.concurrency, policy: config.retry, metrics: metrics, random: random)
    }

    /// Whether any app routes a platform to a hub (then the hub's credentials are needed).
    public static func isHubRouted(_ config: Config) -> Bool {
        config.apps.values.contains { app in app.routes.values.contains { config.providerKind($0) == .azure } }
    }

    /// The parts a hub link writes installations with: the hub-routed providers, set up by
    /// `makeApps` (every other route stands in as the sandbox, so no other provider's
    /// credentials are read or needed), and the worker pool. Nil when no platform of any app
    /// routes to a hub. `registry`: the one the process holds open, whose connections the
    /// hub's shared credentials borrow. `isStopping`: asked before each retry.
    public static func hubWriter(config: Config, spool: Spool, log: Log, registry: (any DeviceRegistry)? = nil,
                                 isStopping: @escaping @Sendable () -> Bool = { false })
        throws(EngineSetupError) -> (writer: InstallationWriter, apps: AppRoutes)? {
        guard isHubRouted(config) else { return nil }
        var hubOnly = config
        let keep = { (name: String) in config.providerKind(name) == .azure ? name : "sandbox" }
        hubOnly.routes = hubOnly.routes.mapValues(keep)
        hubOnly.appsSection = config.appsSection?.mapValues { app in
            var app = app
            app.routes = app.routes.mapValues(keep)
            return app
        }
        let apps = try makeApps(config: hubOnly, spool: spool, log: log, registry: registry)
        return (InstallationWriter(apps: apps, pool: workerPool(config: config), isStopping: isStopping), apps)
    }
}
