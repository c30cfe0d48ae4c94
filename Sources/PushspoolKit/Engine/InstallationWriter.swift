import Dispatch
import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization

/// Carries local registration changes to the hub that resolves tags for a platform (routes to
/// `azure`), with the engine's one `RetryPolicy`: the local registry stays the record, and a
/// change the hub never confirmed is reported as failed with its reason, never dropped silently
/// (`pushspool hub sync` repairs it later).
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
    private let stores: [Platform: (name: String, store: any InstallationStore)]
    private let retry: RetryPolicy
    private let isStopping: @Sendable () -> Bool
    private let queue = DispatchQueue(label: "pushspool.installations")
    /// A hub that never answers costs a retry, as in the worker pool, never a hung job.
    private let watchdog = AttemptWatchdog(timeout: WorkerPool.defaultAttemptTimeout)

    public init(routes: [Platform: ProviderState], retry: RetryPolicy, isStopping: @escaping @Sendable () -> Bool = { false }) {
        var stores: [Platform: (String, any InstallationStore)] = [:]
        for (platform, state) in routes {
            if let store = state.provider.installations, store.serves(platform) { stores[platform] = (state.name, store) }
        }
        self.stores = stores
        self.retry = retry
        self.isStopping = isStopping
    }

    /// Platforms whose registrations must also reach a hub.
    public var platforms: Set<Platform> { Set(stores.keys) }

    public func serves(_ platform: Platform) -> Bool { stores[platform] != nil }

    /// Applies `change` for a device of `platform`, retrying as the policy says; `completion` once.
    public func write(_ change: InstallationChange, platform: Platform,
                      completion: @escaping @Sendable (Outcome) -> Void) {
        guard let (name, store) = stores[platform] else { return }
        attempt(change, store: store, name: name, number: 1, previous: nil, completion: completion)
    }

    /// The blocking form, for one change (a register job, the CLI).
    public func writeAndWait(_ change: InstallationChange, platform: Platform) -> Outcome? {
        guard serves(platform) else { return nil }
        let box = ResultBox<Outcome>()
        write(change, platform: platform) { box.set($0) }
        return box.wait()
    }

    private func attempt(_ change: InstallationChange, store: any InstallationStore, name: String, number: Int,
                         previous: Disposition?, completion: @escaping @Sendable (Outcome) -> Void) {
        let answer: @Sendable (ProviderResult) -> Void = { [self] result in
            func finish(_ ok: Bool) {
                completion(Outcome(change: change, store: name, ok: ok, attempts: number, result: result))
            }
            switch retry.decide(result.disposition, attempt: number, previous: previous, random: { Double.random(in: 0..<1) }) {
            case .finish(let status):
                finish(status == .delivered)
            case .pauseProvider:
                finish(false)
            case .retry(let after):
                if isStopping() { return finish(false) }
                queue.asyncAfter(deadline: .now() + after) { [self] in
                    attempt(change, store: store, name: name, number: number + 1, previous: result.disposition,
                            completion: completion)
                }
            }
        }
        watchdog.bound(name: name, answer: answer) { store.apply(change, completion: $0) }
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
