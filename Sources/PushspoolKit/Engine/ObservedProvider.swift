import Foundation
import PushspoolCore
import Synchronization

/// A provider as the engine sends through it: every call goes to the provider made from the
/// config, and each answer that is not a delivery is noted in a bounded ring (`RecentErrorRing`)
/// on its way back, for `status`, the System page and `pushspool_provider_errors_total`.
///
/// Here rather than in the worker pool: the answer passes through here whatever asked for it
/// (a first attempt, a retry, a scripted test), and a delivery costs one comparison.
final class ObservedProvider: PushProvider {
    let inner: any PushProvider
    private let errors: Mutex<RecentErrorRing>

    init(_ inner: any PushProvider, capacity: Int = ObservedProvider.recentErrors) {
        self.inner = inner
        errors = Mutex(RecentErrorRing(capacity: capacity))
    }

    /// Entries kept per provider.
    static let recentErrors = 20

    var name: String { inner.name }
    var resolvesTags: Bool { inner.resolvesTags }
    var installations: (any InstallationStore)? { inner.installations }
    func audienceProblem(_ audience: Audience) -> String? { inner.audienceProblem(audience) }
    func whenReady(_ ready: @escaping @Sendable () -> Void) { inner.whenReady(ready) }
    func shutdown() { inner.shutdown() }

    func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        let platform = request.platform
        inner.send(request) { [self] result in
            if result.disposition != .delivered { note(result, platform: platform) }
            completion(result)
        }
    }

    private func note(_ result: ProviderResult, platform: Platform) {
        let noted = RecentError(result, platform: platform, at: Date().timeIntervalSince1970)
        errors.withLock { $0.note(noted) }
    }

    /// The ring now (entries newest first, totals by code).
    var recent: RecentErrorRing { errors.withLock { $0 } }
}
