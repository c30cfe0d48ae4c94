import Foundation
import PushspoolCore
import Synchronization

/// Run-time health of one provider, shared by every job of a dispatcher: paused after broken
/// credentials (its remaining targets fail at once instead of hammering the service), and
/// throttled while the service asked for quiet (Retry-After on a whole-service error).
public final class ProviderState: Sendable {
    public let provider: any PushProvider
    private struct State { var pausedReason: String?; var quietUntil: Date = .distantPast }
    private let state = Mutex(State())

    private let onPause: @Sendable (String) -> Void

    public init(provider: any PushProvider, onPause: @escaping @Sendable (String) -> Void = { _ in }) {
        self.provider = provider
        self.onPause = onPause
    }

    public var name: String { provider.name }
    public var pausedReason: String? { state.withLock { $0.pausedReason } }

    public func pause(_ reason: String) {
        let first = state.withLock { s -> Bool in
            guard s.pausedReason == nil else { return false }
            s.pausedReason = reason
            return true
        }
        if first { onPause(reason) }
    }

    /// New targets wait until `date` (a retry-after on one target says the service is busy).
    public func quiet(until date: Date) {
        state.withLock { $0.quietUntil = max($0.quietUntil, date) }
    }

    public var quietUntil: Date { state.withLock { $0.quietUntil } }
}
