import Foundation
import Testing
@testable import PushspoolKit
@testable import PushspoolCLI

/// `PUSHSPOOL_TEST_CLOCK` is read at the composition root (`run`) and nowhere in the engine: the
/// clock it makes starts at its instant and runs at its speed; unset or unreadable, the system's.
@Suite struct TestClockTests {
    @Test func anInstantAndASpeed() {
        let clock = TestClock.fromEnvironment(["PUSHSPOOL_TEST_CLOCK": "2027-03-14T03:00:00Z*3600"])
        let start = RFC3339.date(from: "2027-03-14T03:00:00Z")!
        // An hour of its time is at most a real second ahead (it started a moment ago).
        #expect(clock.secondsUntil(start.addingTimeInterval(3600)) <= 1)
        #expect(clock.now() >= start)
        // Without a speed, its time runs as real time does: a day away is a day of real seconds.
        let plain = TestClock.fromEnvironment(["PUSHSPOOL_TEST_CLOCK": "2027-03-14T03:00:00Z"])
        #expect(plain.secondsUntil(start.addingTimeInterval(86_400)) > 86_000)
    }

    @Test func unsetOrUnreadableIsTheSystemClock() {
        for environment in [[:], ["PUSHSPOOL_TEST_CLOCK": ""], ["PUSHSPOOL_TEST_CLOCK": "tomorrow*2"]] {
            let clock = TestClock.fromEnvironment(environment)
            #expect(abs(clock.now().timeIntervalSinceNow) < 60, "\(environment)")
        }
    }

    @Test func theEngineReadsNoEnvironmentForItsClock() throws {
        // Only the CLI's composition root names the variable.
        let root = Paths.packageRoot.appendingPathComponent("Sources/PushspoolKit")
        let files = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        #expect(!files.isEmpty)
        for file in files {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("PUSHSPOOL_TEST_CLOCK"), "\(file)")
        }
    }

    @Test func theEngineReadsTimeOnlyFromItsInjectedClock() throws {
        // Wall time from `EngineClock` (Support/), durations and waits from a monotonic clock:
        // no file of Engine/ reads the system's wall clock itself.
        let root = Paths.packageRoot.appendingPathComponent("Sources/PushspoolKit/Engine")
        let files = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        #expect(files.count > 20)
        for file in files {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            for reading in ["Date()", "Date.now", "timeIntervalSinceNow"] {
                #expect(!text.contains(reading), "\(file) reads \(reading)")
            }
        }
    }
}
