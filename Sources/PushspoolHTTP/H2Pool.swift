import Foundation

/// Requests waiting for a stream slot, and connects under way, for one origin. Requests the
/// server refused unprocessed go first, in their original order.
final class H2Pool {
    private var retries: [H2Stream] = []
    private var queue: [H2Stream] = []
    private var head = 0
    var connecting = 0
    var speaksHTTP1 = false
    /// When demand last needed every open connection (or one was added): extras close only
    /// after it has fitted in fewer for a while, so a dip between two batches costs nothing.
    var busyAt = monotonicNow()
    var waiting: Int { retries.count + queue.count - head }

    func push(_ s: H2Stream) { queue.append(s) }
    func pushRetry(_ s: H2Stream) { retries.append(s) }
    func pop() -> H2Stream? {
        if !retries.isEmpty { return retries.removeFirst() }
        guard head < queue.count else { return nil }
        let s = queue[head]
        head += 1
        if head == queue.count { queue.removeAll(keepingCapacity: true); head = 0 }
        return s
    }
    /// Puts back a request a connection could not take after all (it stays first).
    func unpop(_ s: H2Stream) { retries.insert(s, at: 0) }
    func takeAll() -> [H2Stream] {
        defer { retries.removeAll(); queue.removeAll(); head = 0 }
        return retries + Array(queue[head...])
    }
    /// How many connections to open beside `open` full ones carrying `perConnection` streams
    /// each, so that what waits has room, counting the connects under way, within `max`.
    func connectionsToOpen(open: Int, perConnection: Int, max: Int) -> Int {
        let per = Swift.max(1, perConnection)
        let uncovered = waiting - connecting * per
        guard uncovered > 0 else { return 0 }
        return Swift.max(0, Swift.min(max - open - connecting, (uncovered + per - 1) / per))
    }

    /// Takes out the requests whose deadline has passed.
    func expire(now: Double) -> [H2Stream] {
        guard waiting > 0, retries.contains(where: { $0.deadline < now }) || queue[head...].contains(where: { $0.deadline < now }) else { return [] }
        let all = takeAll()
        for s in all where s.deadline >= now { push(s) }
        return all.filter { $0.deadline < now }
    }
}
