import Dispatch
import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization

/// Carries local registration changes to the hub that resolves tags for a platform (routes to
/// `azure`) through the worker pool's one attempt-and-retry path (`WorkerPool.perform`): the
/// engine's `RetryPolicy` and random source, the hub's rate cap, quiet time and pause, and the
/// attempt watchdog. The local registry stays the record: a change the hub never confirmed is
/// reported as failed with its reason, never dropped silently (`pushspool hub sync` repairs it
/// later).
///
/// Used by register/unregister jobs, the `register`/`unregister`/`import` commands and `hub sync`.
/// Thread-safe; retries wait on Dispatch timers, not on a blocked thread.
public final class InstallationWriter: Sendable {
    public struct Outcome: Sendable {
        public var change: InstallationChange
        public var store: String
        /// True when the hub holds the change.
        public var ok: Bool
        public var attempts: Int
        public var result: ProviderResult
    }

    /// Per app, its hub-routed platforms → the provider keeping their installations (each app
    /// may have a hub of its own).
    private let stores: [String: [Platform: (state: ProviderState, store: any InstallationStore)]]
    private let defaultApp: String
    private let pool: WorkerPool
    private let isStopping: @Sendable () -> Bool

    /// `pool`: the run's worker pool (its policy, random source and metrics); the CLI's commands
    /// make one of their own. `routes` carry each provider's shared state (pause, quiet, rate cap).
    public convenience init(routes: [Platform: ProviderState], pool: WorkerPool, isStopping: @escaping @Sendable () -> Bool = { false }) {
        self.init(apps: AppRoutes(routes), pool: pool, isStopping: isStopping)
    }

    /// Every app's hubs: a device's installation goes to its own app's hub.
    public init(apps: AppRoutes, pool: WorkerPool, isStopping: @escaping @Sendable () -> Bool = { false }) {
        var stores: [String: [Platform: (ProviderState, any InstallationStore)]] = [:]
        for (app, route) in apps.apps {
            for (platform, state) in route.routes {
                if let store = state.provider.installations, store.serves(platform) { stores[app, default: [:]][platform] = (state, store) }
            }
        }
        self.stores = stores
        defaultApp = apps.defaultApp
        self.pool = pool
        self.isStopping = isStopping
    }

    /// Platforms whose registrations must also reach a hub (the default app's, or `app`'s).
    public var platforms: Set<Platform> { platforms(app: nil) }

    public func platforms(app: String?) -> Set<Platform> { stores[app ?? defaultApp].map { Set($0.keys) } ?? [] }

    /// The apps with a hub-routed platform.
    public var apps: [String] { stores.filter { !$0.value.isEmpty }.keys.sorted() }

    public func serves(_ platform: Platform, app: String? = nil) -> Bool { stores[app ?? defaultApp]?[platform] != nil }

    /// Applies `change` for a device of `platform` in `app` (nil: the device's own app for a put,
    /// else the default app), retrying as the policy says; `completion` once.
    public func write(_ change: InstallationChange, platform: Platform, app: String? = nil,
                      completion: @escaping @Sendable (Outcome) -> Void) {
        guard let (state, store) = stores[Self.app(of: change, given: app) ?? defaultApp]?[platform] else { return }
        pool.perform(via: state, isStopping: isStopping, { _, answer in store.apply(change, completion: answer) }) { end in
            guard case .final(let outcome) = end else {
                // Cut short by a stop: not written; the registry has the change and `hub sync` writes it.
                return completion(Outcome(change: change, store: state.name, ok: false, attempts: 0,
                                          result: ProviderResult(.retry(after: nil), code: "stopping", reason: "the dispatcher is stopping")))
            }
            completion(Outcome(change: change, store: state.name, ok: outcome.status == .delivered,
                               attempts: outcome.attempts, result: outcome.result))
        }
    }

    /// The blocking form, for one change (a register job, the CLI).
    public func writeAndWait(_ change: InstallationChange, platform: Platform, app: String? = nil) -> Outcome? {
        guard serves(platform, app: Self.app(of: change, given: app)) else { return nil }
        let box = ResultBox<Outcome>()
        write(change, platform: platform, app: app) { box.set($0) }
        return box.wait()
    }

    /// The app a change goes to: the one given, else a put's device's own.
    private static func app(of change: InstallationChange, given: String?) -> String? {
        if let given { return given }
        if case .put(let device) = change { return device.app }
        return nil
    }
}

extension InstallationWriter.Outcome {
    /// One line for people: `hub put alice-iphone: failed after 6 attempts (503: hub error)`.
    public var summary: String {
        let action: String
        if case .put = change { action = "put" } else { action = "delete" }
        if ok { return "hub \(action) \(change.installationID): done" }
        let why = [result.code, result.reason].compactMap { $0 }.joined(separator: ": ")
        return "hub \(action) \(change.installationID): failed after \(attempts) attempt\(attempts == 1 ? "" : "s") (\(why))"
    }
}
