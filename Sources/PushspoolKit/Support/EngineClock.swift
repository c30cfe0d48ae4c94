import Foundation
import PushspoolCore

/// The time as the engine reads it for people's clocks (`local_time` waves, quiet hours, the
/// grace rule), and how many real seconds remain until it reads a given instant (what the
/// dispatcher's timer waits). The system clock in production; an accelerated one in tests and
/// benchmarks, so that no test waits for a real 09:00. Injected (`Engine.Hooks.clock`): only the
/// composition root chooses it (`pushspool run` reads the test clock's variable there: `TestClock`),
/// never a type of the engine.
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
}
