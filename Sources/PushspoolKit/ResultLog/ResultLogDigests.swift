import Foundation
import Synchronization

/// The digests of the jobs the dashboard looked at lately (at most `capacity`, least recently
/// used dropped first), each brought up to date when asked.
public final class ResultLogDigests: Sendable {
    private struct Held {
        var digest: ResultLogDigest
        var used: UInt64
    }
    private let spool: Spool
    private let capacity: Int
    private let held = Mutex<(map: [String: Held], clock: UInt64)>(([:], 0))
    /// One reader at a time per process: two pages asking for one job read its log once.
    private let reading = Mutex(())

    public init(spool: Spool, capacity: Int = 32) {
        self.spool = spool
        self.capacity = capacity
    }

    public func digest(id: String) -> ResultLogDigest {
        reading.withLock { _ in
            var digest = held.withLock { $0.map[id]?.digest } ?? ResultLogDigest()
            digest.advance(spool.resultURL(jobID: id))
            held.withLock { h in
                h.clock += 1
                h.map[id] = Held(digest: digest, used: h.clock)
                if h.map.count > capacity, let oldest = h.map.min(by: { $0.value.used < $1.value.used }) { h.map[oldest.key] = nil }
            }
            return digest
        }
    }
}
