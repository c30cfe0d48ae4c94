import Foundation
import PushspoolCore
import Synchronization
import Testing
@testable import PushspoolKit

/// The cap gate on the send path: devices come out in registry order, each with whether it is
/// over its cap, a batch at a time; only the devices still to send are reserved; a failed
/// reservation stops the stage with its error; a stop from the next stage stops it too.
@Suite struct CapStageTests {
    /// Counts in memory: the keys listed in `over` are over their cap; every reservation is kept.
    final class Counts: FrequencyCapCounts {
        let over: Set<Int64>
        /// The reservation of the batch holding this key fails (by its batch, not by the order
        /// of the calls: two reservations may be under way at once and reach here in either).
        let failing: Int64?
        let reserved = Mutex<[[Int64]]>([])
        init(over: Set<Int64>, failing: Int64? = nil) {
            self.over = over
            self.failing = failing
        }
        func reserveCapped(job: String, devices: [CapCandidate], now: Date) throws(RegistryError) -> Set<Int64> {
            reserved.withLock { $0.append(devices.map(\.key)) }
            if let failing, devices.contains(where: { $0.key == failing }) { throw RegistryError("the registry is away") }
            return over.intersection(devices.map(\.key))
        }
        func pruneCapCounts(before: Date) throws(RegistryError) -> Int { 0 }
    }

    static func device(_ key: Int64) -> Device {
        Device(id: "d\(key)", platform: .apns, handle: "h\(key)", tags: [], updatedAt: Date())
    }

    static func stage(_ counts: Counts, toSend: @escaping (Device) -> Bool = { _ in true }) -> CapStage {
        CapStage(gate: CapGate(registry: counts, jobID: "j", caps: [AppConfig.implicitID: FrequencyCap(max: 1, perHours: 24)]),
                 toSend: toSend, wait: .holdingNothing)
    }

    @Test func devicesComeOutInOrderWithTheirCap() {
        let n = Int64(CapGate.batchSize * 2 + 17)
        let counts = Counts(over: Set(stride(from: 0, to: n, by: 7)))
        let stage = Self.stage(counts, toSend: { $0.id != "d3" })
        var out: [(Int64, Bool)] = []
        func next(_ d: Device, _ key: Int64, _ capped: Bool) -> Bool { out.append((key, capped)); return true }
        for key in 0..<n { #expect(stage.offer(Self.device(key), key: key, then: next)) }
        // Nothing passes on before its batch's reservation is answered: two full batches, one reserved.
        #expect(out.count == CapGate.batchSize)
        #expect(stage.finish(then: next))
        stage.close()
        #expect(out.map(\.0) == Array(0..<n))
        #expect(out.allSatisfy { key, capped in capped == (key % 7 == 0 && key != 3) })
        let reserved = counts.reserved.withLock { $0 }
        // Each batch reserved once (two may be under way at once, so in either order).
        #expect(reserved.map(\.count).sorted() == [17, CapGate.batchSize - 1, CapGate.batchSize])
        #expect(!reserved.joined().contains(3))
        #expect(stage.failure == nil)
    }

    @Test func aFailedReservationStopsTheStage() {
        let counts = Counts(over: [], failing: 0)
        let stage = Self.stage(counts)
        var passed = 0
        func next(_ d: Device, _ key: Int64, _ capped: Bool) -> Bool { passed += 1; return true }
        var going = true
        for key in 0..<Int64(CapGate.batchSize * 2) where going { going = stage.offer(Self.device(key), key: key, then: next) }
        stage.close()
        #expect(!going && passed == 0)
        #expect(stage.failure?.description.contains("the registry is away") == true)
    }

    @Test func aStopDownstreamStopsTheStage() {
        let stage = Self.stage(Counts(over: []))
        var passed = 0
        func next(_ d: Device, _ key: Int64, _ capped: Bool) -> Bool { passed += 1; return passed < 10 }
        for key in 0..<Int64(CapGate.batchSize) { _ = stage.offer(Self.device(key), key: key, then: next) }
        #expect(!stage.finish(then: next))
        stage.close()
        #expect(passed == 10 && stage.failure == nil)
    }
}
