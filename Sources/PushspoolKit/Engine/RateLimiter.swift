import Foundation
import Synchronization

/// A provider's request rate cap (`max_per_second`), shared by every job and every retry of a
/// dispatcher: each request reserves the next free moment on an evenly spaced schedule (the
/// generic cell rate algorithm, a token bucket of depth one), so no second ever carries more
/// than the cap, whatever the number of producers. Waiting happens in the caller.
public final class RateLimiter: Sendable {
    public let perSecond: Double
    private let interval: Double
    /// The earliest moment the next request may go.
    private let next = Mutex<Double>(0)
    private let clock: @Sendable () -> Double

    public init(perSecond: Double, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.perSecond = perSecond
        interval = 1 / perSecond
        self.clock = clock
    }

    /// Reserves a moment at or after `earliest` (default now) and returns it; the caller sends then.
    public func reserve(notBefore earliest: Double? = nil) -> Double {
        let now = clock()
        return next.withLock { n in
            let at = max(n, earliest ?? now, now)
            n = at + interval
            return at
        }
    }

    /// Waits (in naps of at most 0.25 s, so a stop or a cancel is not held up) until a reserved
    /// moment; false when `halted` said to give up.
    public static func wait(until moment: Double, halted: @Sendable () -> Bool) -> Bool {
        while true {
            if halted() { return false }
            let left = moment - Date().timeIntervalSince1970
            if left <= 0 { return true }
            Thread.sleep(forTimeInterval: min(left, 0.25))
        }
    }
}
