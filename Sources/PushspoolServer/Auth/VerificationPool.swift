import Dispatch
import Foundation
import Synchronization

/// Where passwords are hashed: a few workers of their own and a short queue, never the HTTP
/// server's event threads. bcrypt at cost 12 takes about a quarter of a second of CPU on
/// purpose; on an event thread every connection of that thread would wait behind it.
///
/// At most `workers` checks run at once (on Dispatch's threads, which the drain loop below
/// holds for as long as work is queued) and at most `queueLimit` more wait. A check past that
/// is refused at once (`submit` returns false: the caller answers `503` with `Retry-After`)
/// instead of waiting behind a flood of guesses.
///
/// Fairness: a check may name whose it is (the user name it claims), and one name holds at most
/// `perKeyLimit` checks waiting or running. A flood of guesses at one account then takes one
/// worker's turn at a time, and every other user's first login still gets its turn instead of
/// a `503` for as long as the flood lasts.
final class VerificationPool: Sendable {
    private struct State {
        var queued: [@Sendable () -> Void] = []
        var head = 0
        var running = 0
        var perKey: [String: Int] = [:]
    }

    let workers: Int
    let queueLimit: Int
    let perKeyLimit: Int
    private let state = Mutex(State())

    /// By default half the cores (at least one), so that a flood of wrong passwords leaves the
    /// other half to the event threads; up to 8 checks a worker wait; one check per user name.
    init(workers: Int = max(1, ProcessInfo.processInfo.activeProcessorCount / 2), queueLimit: Int? = nil,
         perKeyLimit: Int = 1) {
        self.workers = max(1, workers)
        self.queueLimit = queueLimit ?? self.workers * 8
        self.perKeyLimit = max(1, perKeyLimit)
    }

    /// Runs `work` on the pool, or returns false when it is full or `key` holds its share already.
    func submit(key: String? = nil, _ work: @escaping @Sendable () -> Void) -> Bool {
        let job: @Sendable () -> Void
        if let key {
            job = { [self] in
                work()
                release(key)
            }
        } else {
            job = work
        }
        let start = state.withLock { s -> Bool? in
            if let key, s.perKey[key, default: 0] >= perKeyLimit { return nil }
            let started: Bool
            if s.running < workers {
                s.running += 1
                started = true
            } else {
                guard s.queued.count - s.head < queueLimit else { return nil }
                s.queued.append(job)
                started = false
            }
            if let key { s.perKey[key, default: 0] += 1 }
            return started
        }
        guard let start else { return false }
        if start { DispatchQueue.global().async { self.drain(first: job) } }
        return true
    }

    private func release(_ key: String) {
        state.withLock { s in
            if let n = s.perKey[key], n > 1 { s.perKey[key] = n - 1 } else { s.perKey[key] = nil }
        }
    }

    /// Checks waiting or running (tests, metrics).
    var load: Int { state.withLock { $0.running + $0.queued.count - $0.head } }

    private func drain(first: @escaping @Sendable () -> Void) {
        var next: (@Sendable () -> Void)? = first
        while let work = next {
            work()
            next = state.withLock { s -> (@Sendable () -> Void)? in
                guard s.head < s.queued.count else {
                    s.queued.removeAll(keepingCapacity: true)
                    s.head = 0
                    s.running -= 1
                    return nil
                }
                let w = s.queued[s.head]
                s.head += 1
                return w
            }
        }
    }
}
