import Dispatch

/// Seconds on the monotonic clock Dispatch's timers count on (`DispatchTime`): what the queue's
/// own waits and spans are measured in (a skipped job's minute, a renewal that is late, a retry
/// while the database is away), never the wall clock an operator or NTP may move. Leases are on
/// the database's clock; nothing in the queue reads the time of day.
enum Uptime {
    static var seconds: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1_000_000_000 }
}
