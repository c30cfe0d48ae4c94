/// A provider's recent failed answers, newest first, at most `capacity` of them, and every failed
/// answer counted by code since the start: what `status`, the System page and
/// `pushspool_provider_errors_total` show.
///
/// An answer like the newest one (same code and reason: 10,000 `BadDeviceToken` in a broadcast)
/// adds to its count instead of taking a slot, so a flood of one error leaves the ones before it
/// in view, and counting it allocates nothing.
public struct RecentErrorRing: Sendable, Equatable {
    public let capacity: Int
    /// Oldest first; `newestFirst` turns it round.
    private var slots: [RecentError] = []
    /// Where the next entry goes once the ring is full (the oldest slot).
    private var next = 0
    /// Failed answers by code since the start (never reset: a counter).
    public private(set) var totals: [String: Int] = [:]

    public init(capacity: Int = 20) {
        self.capacity = max(1, capacity)
    }

    public mutating func note(_ error: RecentError) {
        totals[error.code, default: 0] += error.count
        if !slots.isEmpty {
            let newest = next == 0 ? slots.count - 1 : next - 1
            if slots[newest].code == error.code && slots[newest].reason == error.reason {
                slots[newest].count += error.count
                slots[newest].at = max(slots[newest].at, error.at)
                return
            }
        }
        if slots.count < capacity {
            slots.append(error)
        } else {
            slots[next] = error
            next = (next + 1) % capacity
        }
    }

    /// The entries, newest first.
    public var newestFirst: [RecentError] {
        Array((slots[next...] + slots[..<next]).reversed())
    }
}
