/// The one retry policy, applied by the engine to every provider's dispositions:
/// exponential backoff with full jitter, capped, honouring a service's retry-after.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    public var baseDelay: Double
    public var maxDelay: Double

    public init(maxAttempts: Int = 6, baseDelay: Double = 0.25, maxDelay: Double = 300) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    public enum Decision: Sendable, Equatable {
        /// Final: write this status to the result log.
        case finish(DeliveryStatus)
        /// Send again after this many seconds.
        case retry(after: Double)
        /// Final failure, and the provider must be paused (credentials/config broken).
        case pauseProvider
    }

    /// Decides what follows attempt number `attempt` (1-based) that ended with `disposition`.
    /// `previous` is the disposition of the attempt before, if any (to stop refresh loops).
    /// `random` returns a uniform value in 0..<1 (injected so tests are deterministic).
    public func decide(_ disposition: Disposition, attempt: Int, previous: Disposition? = nil,
                       random: () -> Double) -> Decision {
        switch disposition {
        case .delivered:
            return .finish(.delivered)
        case .deviceGone:
            return .finish(.unregistered)
        case .rejected, .senderRefused:
            return .finish(.failed)
        case .credentialsBroken:
            return .pauseProvider
        case .refreshCredentials:
            // The provider renewed the credential; one immediate retry. Twice in a row: broken.
            if previous == .refreshCredentials { return .pauseProvider }
            return attempt < maxAttempts ? .retry(after: 0) : .finish(.failed)
        case .reconnect:
            return attempt < maxAttempts ? .retry(after: 0) : .finish(.failed)
        case .retry(let after):
            guard attempt < maxAttempts else { return .finish(.failed) }
            let ceiling = min(maxDelay, baseDelay * pow2(attempt - 1))
            let jittered = ceiling * random()                 // full jitter: uniform in [0, ceiling)
            // A service's own wait is honoured up to `maxDelay`: one `Retry-After: 86400` must not
            // hold a dispatcher (and every job behind it) for a day.
            if let after { return .retry(after: min(max(after, jittered), maxDelay)) }
            return .retry(after: jittered)
        }
    }

    private func pow2(_ n: Int) -> Double {
        var r = 1.0
        for _ in 0..<max(0, min(n, 60)) { r *= 2 }
        return r
    }
}
