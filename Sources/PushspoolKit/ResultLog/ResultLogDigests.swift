import Foundation
import Synchronization

/// The digests of the jobs the dashboard looked at lately (at most `capacity`, least recently
/// used dropped first), each brought up to date when asked: a job that has ended (its log ends
/// with its summary) at once, a running one at most every `runningRefresh` seconds. A running
/// campaign's log grows by a line per target, and reading those lines is what the dashboard's
/// curve, failures and funnel cost; its counts (`status`, from the dispatcher's checkpoint) do
/// not wait for this.
public final class ResultLogDigests: Sendable {
    private struct Held {
        var digest: ResultLogDigest
        var used: UInt64
        /// When it was last brought up to date.
        var readAt: Double
    }
    private let spool: Spool
    private let capacity: Int
    let runningRefresh: Double
    private let held = Mutex<(map: [String: Held], clock: UInt64)>(([:], 0))
    /// One reader at a time per process: two pages asking for one job read its log once.
    private let reading = Mutex(())

    public init(spool: Spool, capacity: Int = 32, runningRefresh: Double = 5) {
        self.spool = spool
        self.capacity = capacity
        self.runningRefresh = runningRefresh
    }

    public func digest(id: String, now: Double = Date().timeIntervalSince1970) -> ResultLogDigest {
        let url = spool.resultURL(jobID: id)
        if let recent = recent(id: id, now: now), ResultLogTail.summary(url) == nil { return recent }
        return reading.withLock { _ in
            var digest = held.withLock { $0.map[id]?.digest } ?? ResultLogDigest()
            digest.advance(url)
            held.withLock { h in
                h.clock += 1
                h.map[id] = Held(digest: digest, used: h.clock, readAt: now)
                if h.map.count > capacity, let oldest = h.map.min(by: { $0.value.used < $1.value.used }) { h.map[oldest.key] = nil }
            }
            return digest
        }
    }

    /// The digest of a job still running (no summary read yet) if it was read less than
    /// `runningRefresh` ago. Whether its log has ended since is for the caller to ask.
    private func recent(id: String, now: Double) -> ResultLogDigest? {
        held.withLock { h in
            guard var e = h.map[id], e.digest.found, e.digest.summary == nil, now >= e.readAt, now - e.readAt < runningRefresh else { return nil }
            h.clock += 1
            e.used = h.clock
            h.map[id] = e
            return e.digest
        }
    }
}
