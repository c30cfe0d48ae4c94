import Foundation
import PushspoolKit

/// `PUSHSPOOL_TEST_CLOCK=<RFC 3339>[*<speed>]`, for tests and benchmarks only (never set it in
/// production: waves would go out at the wrong real time): `run`'s clock starts at that instant
/// and runs `speed` times real time (default 1). Unset or unreadable: the system clock.
///
/// Read here, at the composition root, and handed to the engine (`Engine.Hooks.clock`): no type
/// of the engine reads the environment for its time.
enum TestClock {
    static let variable = "PUSHSPOOL_TEST_CLOCK"

    static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> EngineClock {
        guard let value = environment[variable], !value.isEmpty else { return .system }
        let parts = value.split(separator: "*", maxSplits: 1).map(String.init)
        guard let start = RFC3339.date(from: parts[0]) else { return .system }
        return .accelerated(start: start, speed: parts.count > 1 ? Double(parts[1]) ?? 1 : 1)
    }
}
