import Foundation
import PushspoolCore

/// The time as the engine reads it for people's clocks (`local_time` waves, quiet hours, the
/// grace rule), and how many real seconds remain until it reads a given instant (what the
/// dispatcher's timer waits). The system clock in production; an accelerated one in tests and
/// benchmarks, so that no test waits for a real 09:00.
public struct EngineClock: Sendable {
    public let now: @Sendable () -> Date
    public let secondsUntil: @Sendable (Date) -> TimeInterval

    public init(now: @escaping @Sendable () -> Date, secondsUntil: @escaping @Sendable (Date) -> TimeInterval) {
        self.now = now
        self.secondsUntil = secondsUntil
    }

    public static let system = EngineClock(now: { Date() }, secondsUntil: { $0.timeIntervalSinceNow })

    /// Reads `start` now and runs `speed` times faster than real time.
    public static func accelerated(start: Date, speed: Double) -> EngineClock {
        let origin = Date(), speed = max(speed, 0.001)
        return EngineClock(now: { start.addingTimeInterval(Date().timeIntervalSince(origin) * speed) },
                           secondsUntil: { date in date.timeIntervalSince(start) / speed - Date().timeIntervalSince(origin) })
    }

    /// `PUSHSPOOL_TEST_CLOCK=<RFC 3339>[*<speed>]`, for tests and benchmarks only (never set it in
    /// production: waves would go out at the wrong real time): the process's clock starts at
    /// that instant and runs `speed` times real time (default 1). Unset or unreadable: the system clock.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> EngineClock {
        guard let value = environment["PUSHSPOOL_TEST_CLOCK"], !value.isEmpty else { return .system }
        let parts = value.split(separator: "*", maxSplits: 1).map(String.init)
        guard let start = RFC3339.date(from: parts[0]) else { return .system }
        return accelerated(start: start, speed: parts.count > 1 ? Double(parts[1]) ?? 1 : 1)
    }
}
