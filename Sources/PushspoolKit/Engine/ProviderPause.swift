import Foundation

/// A provider's pause or quiet time, as hosts share it: which provider, what, and how many
/// seconds of it are left (seconds, not an instant: each host's clock may differ).
public struct ProviderPause: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Broken credentials or a refusing sender: its targets fail at once with the reason.
        case paused(String)
        /// Retry-After on the whole service: new targets wait.
        case quiet
    }
    public var provider: String
    public var kind: Kind
    public var seconds: Double

    public init(provider: String, kind: Kind, seconds: Double) {
        self.provider = provider
        self.kind = kind
        self.seconds = seconds
    }
}

/// Where providers' pauses are shared with the other hosts (`SharedProviderPauses`: the
/// PostgreSQL registry).
public protocol ProviderPauseSharing: Sendable {
    func publish(_ pause: ProviderPause) throws
    func current() throws -> [ProviderPause]
}
