import Foundation
import PushspoolCore

/// The one clock of the engine, injected (`Engine.Hooks.clock`): only the composition root
/// chooses it (`pushspool run` reads the test clock's variable there: `TestClock`), never a type
/// of the engine, and no file of `Engine/` reads the system's time itself. This file, outside
/// `Engine/`, is where the system's clock is read.
///
/// It gives two wall times, which are the same in production:
/// - `now`: the time as the engine reads it for people's clocks (`local_time` waves, quiet
///   hours, the grace rule), and `secondsUntil`, how many real seconds remain until it reads a
///   given instant (what the dispatcher's timer waits). An accelerated one in tests and
///   benchmarks, so that no test waits for a real 09:00.
/// - `wall`: the wall clock the kernel stamps files with and other processes (`status`,
///   `serve`) read records by: file ages, a job's `not_before`, heartbeats and the timestamps
///   written for people. The system's, even under an accelerated clock, since a file's
///   modification time runs at real speed.
///
/// How long something took and how long to wait are no wall times: those are monotonic
/// (`DispatchTime`, `ContinuousClock`), which no one sets back.
/// - `uptime`: that monotonic clock in seconds (`Uptime`, Dispatch's), on which the send path's
///   due times are set (a provider's quiet time, a retry, the rate cap's turns); the waits
///   themselves are Dispatch's deadlines on the same clock. Tests stand it still to read where a
///   due time falls, never to move a wait. `wall(atUptime:)` names such a moment for people.
public struct EngineClock: Sendable {
    public let now: @Sendable () -> Date
    public let secondsUntil: @Sendable (Date) -> TimeInterval
    public let wall: @Sendable () -> Date
    public let uptime: @Sendable () -> Double

    public init(now: @escaping @Sendable () -> Date, secondsUntil: @escaping @Sendable (Date) -> TimeInterval,
                wall: @escaping @Sendable () -> Date = { Date() }, uptime: @escaping @Sendable () -> Double = { Uptime.seconds }) {
        self.now = now
        self.secondsUntil = secondsUntil
        self.wall = wall
        self.uptime = uptime
    }

    /// The wall time at which `uptime` reads `moment`: the one place a monotonic due time becomes
    /// a time of day (for people, a record another process reads), at the wall clock's setting now.
    public func wall(atUptime moment: Double) -> Date {
        let left = moment - uptime()
        return wall().addingTimeInterval(left)
    }

    public static let system = EngineClock(now: { Date() }, secondsUntil: { $0.timeIntervalSinceNow })

    /// Reads `start` now and runs `speed` times faster than real time; its `wall` is the system's.
    public static func accelerated(start: Date, speed: Double) -> EngineClock {
        let origin = Date(), speed = max(speed, 0.001)
        return EngineClock(now: { start.addingTimeInterval(Date().timeIntervalSince(origin) * speed) },
                           secondsUntil: { date in date.timeIntervalSince(start) / speed - Date().timeIntervalSince(origin) })
    }
}
