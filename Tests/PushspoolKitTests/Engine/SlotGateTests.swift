import Dispatch
@testable import PushspoolKit
import Synchronization
import Testing

/// The worker pool's slots shared by threads (`SlotGate`): the atomic count never lets more than
/// the capacity be taken, and every sleeper is woken.
@Suite struct SlotGateTests {
    @Test(arguments: [2, 16])
    func threadsTakingAndReleasingNeverHoldMoreThanTheCapacityAndAllFinish(_ capacity: Int) {
        let gate = SlotGate(capacity: capacity)
        let held = Atomic(0), most = Atomic(0), done = Atomic(0)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<5_000 {
                if !gate.tryTake() { gate.take() }
                let now = held.wrappingAdd(1, ordering: .relaxed).newValue
                var seen = most.load(ordering: .relaxed)
                while now > seen {
                    let (swapped, current) = most.compareExchange(expected: seen, desired: now, ordering: .relaxed)
                    if swapped { break }
                    seen = current
                }
                held.wrappingSubtract(1, ordering: .relaxed)
                gate.release()
                done.wrappingAdd(1, ordering: .relaxed)
            }
        }
        #expect(done.load(ordering: .relaxed) == 20_000)
        #expect(most.load(ordering: .relaxed) <= capacity)
        #expect(held.load(ordering: .relaxed) == 0)
    }

    @Test func aSleeperIsWokenOnceABatchIsFree() {
        let gate = SlotGate(capacity: 16)     // refill 2
        for _ in 0..<16 { #expect(gate.tryTake()) }
        let woke = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            gate.take()
            woke.signal()
        }
        gate.release()
        gate.release()
        woke.wait()
        let left = gate.tryTake()
        #expect(left)
    }
}
