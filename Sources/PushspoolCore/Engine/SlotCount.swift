/// A provider's slots in the worker pool as numbers: how many are free, how many producers sleep
/// for one, and when a release wakes them. Pure; `SlotGate` (PushspoolKit) keeps one in an
/// atomic word and does the sleeping.
///
/// A producer that finds no slot free sleeps until `refill` are free again, not until the first
/// one is: woken for one slot, it hands out one target, finds none free and sleeps again, so
/// every target paid a wakeup of the producer, and the transport got its requests one by one (one
/// wakeup and one write each). Woken for `refill`, the producer hands out that many in one turn,
/// and the whole path (the poll thread's write, the answers read together, the result lines
/// written together, the slots given back together) runs on batches of that size: at 256 streams
/// to nginx a push then costs fewer thread switches. Never more than `capacity` are taken; while
/// a producer sleeps up to `refill - 1` slots stay unused, a small part of `capacity` (an eighth at
/// most, 32 at most). Retries waiting out their backoff keep their slots: with nearly all of them
/// so held, a producer sleeps until some end, which is how a struggling service slows intake.
public struct SlotCount: Sendable, Equatable {
    public let capacity: Int
    /// How many slots must be free before sleepers are woken.
    public let refill: Int
    public private(set) var free: Int
    public private(set) var sleepers = 0

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
        refill = Self.refill(for: self.capacity)
        free = self.capacity
    }

    /// The same slots with `free` free and `sleepers` asleep (a count kept packed elsewhere, read back).
    public func with(free: Int, sleepers: Int) -> SlotCount {
        var count = self
        count.free = free
        count.sleepers = sleepers
        return count
    }

    /// An eighth of the slots, at least 1 and at most 32: enough for batches that save most of
    /// the switches (32 pushes share each), few enough that the streams left idle meanwhile do not
    /// matter (at most 32, or an eighth, of the connection's work).
    public static func refill(for capacity: Int) -> Int { max(1, min(32, capacity / 8)) }

    /// A slot taken: true. None free: false, and the caller counts as a sleeper until a release
    /// wakes it.
    public mutating func take() -> Bool {
        if free > 0 {
            free -= 1
            return true
        }
        sleepers += 1
        return false
    }

    /// A slot taken if one is free, never counted as a sleeper.
    public mutating func tryTake() -> Bool {
        guard free > 0 else { return false }
        free -= 1
        return true
    }

    /// A slot given back (`count` of them); returns how many sleepers to wake now: all of them
    /// once `refill` are free, else none. Each woken sleeper asks `take` again.
    public mutating func release(_ count: Int = 1) -> Int {
        assert(free + count <= capacity, "a slot given back twice")
        free = min(capacity, free + count)
        guard sleepers > 0, free >= refill else { return 0 }
        defer { sleepers = 0 }
        return sleepers
    }
}
