import PushspoolCore
import Testing

/// A provider's slots as numbers (`SlotCount`): never more than the capacity taken, and sleepers
/// woken only once a batch of slots (`refill`) is free.
@Suite struct SlotCountTests {
    struct Refill: Sendable, CustomTestStringConvertible {
        var capacity: Int, refill: Int
        var testDescription: String { "capacity \(capacity): \(refill)" }
    }

    @Test(arguments: [
        Refill(capacity: 1, refill: 1),        // one slot: woken for it, as a semaphore would
        Refill(capacity: 8, refill: 1),
        Refill(capacity: 15, refill: 1),
        Refill(capacity: 16, refill: 2),       // an eighth
        Refill(capacity: 256, refill: 32),
        Refill(capacity: 1_000, refill: 32),   // at most 32
        Refill(capacity: 4_000, refill: 32),
        Refill(capacity: 0, refill: 1),        // read as 1
    ])
    func aSleeperWaitsForAnEighthOfTheSlotsAtMost32(_ c: Refill) {
        #expect(SlotCount(capacity: c.capacity).refill == c.refill)
    }

    /// `count` slots taken without sleeping; false if one was not free.
    private func takeAll(_ count: Int, of slots: inout SlotCount) -> Bool {
        (0..<count).allSatisfy { _ in slots.tryTake() }
    }

    /// What each of `count` single releases returned.
    private func release(_ count: Int, of slots: inout SlotCount) -> [Int] {
        (0..<count).map { _ in slots.release() }
    }

    @Test func neverMoreThanTheCapacityIsTaken() {
        var slots = SlotCount(capacity: 16)
        #expect(takeAll(16, of: &slots))
        let spare = slots.tryTake()
        #expect(!spare)
        #expect(slots.sleepers == 0)   // a try never sleeps
        let taken = slots.take()
        #expect(!taken)
        #expect(slots.sleepers == 1)
        #expect(slots.free == 0)
    }

    @Test func aSleeperIsWokenOnceRefillSlotsAreFreeNotAtTheFirst() {
        var slots = SlotCount(capacity: 256)
        #expect(takeAll(256, of: &slots))
        let taken = slots.take()
        #expect(!taken)
        #expect(release(31, of: &slots) == Array(repeating: 0, count: 31))
        #expect(release(1, of: &slots) == [1])
        #expect(slots.sleepers == 0)
        // Woken, it takes the 32 one by one without sleeping, then sleeps again.
        #expect((0..<32).allSatisfy { _ in slots.take() })
        let more = slots.take()
        #expect(!more)
    }

    @Test func everySleeperIsWokenTogetherAndAReleaseAfterWakesNobody() {
        var slots = SlotCount(capacity: 16)
        #expect(takeAll(16, of: &slots))
        let sleeping = (0..<3).map { _ in slots.take() }
        #expect(sleeping == [false, false, false])
        #expect(release(3, of: &slots) == [0, 3, 0])
        #expect(slots.free == 3)
    }

    @Test func aReleaseWithNoSleeperWakesNobodyAndFreesTheSlot() {
        var slots = SlotCount(capacity: 8)
        #expect(takeAll(2, of: &slots))
        let woken = slots.release(2)
        #expect(woken == 0)
        #expect(slots.free == 8)
    }

    @Test func slotsFreeBelowRefillLeaveASleeperAsleep() {
        // Retries hold slots while they wait: 5 free of 256 are taken, then the producer sleeps
        // until 32 are free, not at the next one.
        var slots = SlotCount(capacity: 256)
        #expect(takeAll(256, of: &slots))
        let few = slots.release(5)
        #expect(few == 0)
        #expect((0..<5).allSatisfy { _ in slots.take() })
        let sixth = slots.take()
        #expect(!sixth)
        let almost = slots.release(31)
        #expect(almost == 0)
        #expect(release(1, of: &slots) == [1])
    }
}

extension SlotCountTests {
    @Test func aCountReadBackKeepsItsCapacityAndRefill() {
        let count = SlotCount(capacity: 256).with(free: 7, sleepers: 2)
        #expect(count.capacity == 256)
        #expect(count.refill == 32)
        #expect(count.free == 7)
        #expect(count.sleepers == 2)
    }
}
