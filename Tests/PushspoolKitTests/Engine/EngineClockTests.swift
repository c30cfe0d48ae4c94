import Foundation
import Synchronization
import Testing
@testable import PushspoolKit
import PushspoolCore
import PushspoolTestSupport

/// The engine reads the clock it is given (`Engine.Hooks.clock`), in its parts too: a clock whose
/// wall time reads 2030 shows in what they write and decide.
@Suite struct EngineClockTests {
    static let instant = Date(timeIntervalSince1970: 1_893_456_000)   // 2030-01-01T00:00:00Z
    /// Its monotonic clock stands still too: a quiet time's end is read where it falls.
    static let fixed = EngineClock(now: { instant }, secondsUntil: { $0.timeIntervalSince(instant) }, wall: { instant }, uptime: { 0 })

    @Test func theEnginesPartsReadItsClock() throws {
        let h = try EngineHarness()
        let state = ProviderState(provider: ScriptedProvider(name: "fcm"))
        let engine = Engine(config: Config(), spool: h.spool, registry: h.registry, routes: [.fcm: state],
                            hooks: Engine.Hooks(log: Log(minimum: .error), clock: Self.fixed))
        defer { engine.shutdown() }
        // An operator's request written through the engine's controls is stamped on its clock.
        try engine.controls.write(.pause, id: "j")
        let request = String(decoding: try FileIO.readAll(engine.controls.url("j", .pause)), as: UTF8.self)
        #expect(request.contains(#""requested_at":"2030-01-01T00:00:00"#), "\(request)")
    }

    @Test func aProvidersQuietTimeIsReadOnTheClockItWasMadeWith() throws {
        let apps = try EngineSetup.makeApps(config: Config(), spool: nil, log: Log(minimum: .error), clock: Self.fixed)
        let state = try #require(apps.routes[.fcm])
        let policy = RetryPolicy(maxAttempts: 4, baseDelay: 5, maxDelay: 60)
        for _ in 0..<ProviderState.failuresBeforeThrottle { state.noteTransientFailure(policy) }
        // Eight failures in a row: new targets hold back for 10 s from the clock's wall time.
        #expect(state.quietUntil == Self.instant.addingTimeInterval(10))
    }

    @Test func aPauseLastsItsSecondsWhateverTheWallClockDoes() throws {
        let wall = Mutex(Self.instant)
        let clock = EngineClock(now: { wall.withLock { $0 } }, secondsUntil: { _ in 0 }, wall: { wall.withLock { $0 } })
        let state = ProviderState(provider: ScriptedProvider(name: "fcm"), pauseDuration: 3600, clock: clock)
        state.pause("Forbidden")
        wall.withLock { $0 = $0.addingTimeInterval(7200) }   // the wall clock set two hours forward
        #expect(state.pausedReason == "Forbidden", "an hour's pause is still in force")
    }

    /// A quiet time ends on the monotonic clock: a wall clock stepped meanwhile moves only where
    /// its end is shown to people, never when it ends.
    @Test func aQuietTimeLastsItsSecondsWhateverTheWallClockDoes() {
        let wall = Mutex(Self.instant)
        let clock = EngineClock(now: { wall.withLock { $0 } }, secondsUntil: { _ in 0 }, wall: { wall.withLock { $0 } }, uptime: { 100 })
        let state = ProviderState(provider: ScriptedProvider(name: "fcm"), clock: clock)
        state.quiet(for: 3600)
        wall.withLock { $0 = $0.addingTimeInterval(7200) }   // the wall clock set two hours forward
        #expect(state.quietEnds == 3700, "still an hour to wait")
        #expect(state.quietUntil == Self.instant.addingTimeInterval(7200 + 3600), "shown on the wall clock as set now")
        // A wall time (a Retry-After's HTTP-date) becomes a monotonic end once, on the wall as set then.
        state.quiet(until: Self.instant.addingTimeInterval(7200 + 7200))
        #expect(state.quietEnds == 7300)
    }
}
