import Dispatch

/// Seconds on the monotonic clock Dispatch's timers count on (`DispatchTime`): what the queue's
/// own waits and spans are measured in (a skipped job's minute, a renewal that is late, a retry
/// while the database is away), and the send path's due times (a provider's quiet time, a retry's
/// due time, the rate cap's turns, a job's pacing), never the wall clock an operator or NTP may
/// move. Leases are on the database's clock; nothing in the queue reads the time of day.
@usableFromInline enum Uptime {
    @usableFromInline static var seconds: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1_000_000_000 }

    /// The Dispatch deadline at `seconds` on this clock (a moment already past: one past).
    static func deadline(_ seconds: Double) -> DispatchTime {
        // Never 0, which Dispatch reads as "now", and never beyond what a deadline holds.
        DispatchTime(uptimeNanoseconds: UInt64(min(max((seconds * 1e9).rounded(.up), 1), 9e18)))
    }
}
