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

    /// Hub-routed platforms → the provider keeping their installations.
    private let stores: [Platform: (state: ProviderState, store: any InstallationStore)]
    private let pool: WorkerPool
    private let isStopping: @Sendable () -> Bool

    /// `pool`: the run's worker pool (its policy, random source and metrics); the CLI's commands
    /// make one of their own. `routes` carry each provider's shared state (pause, quiet, rate cap).
    public init(routes: [Platform: ProviderState], pool: WorkerPool, isStopping: @escaping @Sendable () -> Bool = { false }) {
        var stores: [Platform: (ProviderState, any InstallationStore)] = [:]
        for (platform, state) in routes {
            if let store = state.provider.installations, store.serves(platform) { stores[platform] = (state, store) }
        }
        self.stores = stores
        self.pool = pool
        self.isStopping = isStopping
    }

    /// Platforms whose registrations must also reach a hub.
    public var platforms: Set<Platform> { Set(stores.keys) }

    public func serves(_ platform: Platform) -> Bool { stores[platform] != nil }

    /// Applies `change` for a device of `platform`, retrying as the policy says; `completion` once.
    public func write(_ change: InstallationChange, platform: Platform,
                      completion: @escaping @Sendable (Outcome) -> Void) {
        guard let (state, store) = stores[platform] else { return }
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
    public func writeAndWait(_ change: InstallationChange, platform: Platform) -> Outcome? {
        guard serves(platform) else { return nil }
        let box = ResultBox<Outcome>()
        write(change, platform: platform) { box.set($0) }
        return box.wait()
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
