import Dispatch
import Synchronization

/// The answers an `HTTPServer` still owes: every suspended request, each with its deadline
/// (`HTTPServer.Limits.requestTimeoutSeconds`). One timer, armed for the oldest deadline only
/// while some request waits (never a periodic wake-up): a request whose route has not answered
/// by then is answered `503` with `Retry-After`, so no suspended connection waits for ever. On
/// `close` (the server stopping), every request still waiting is answered at once, and nothing
/// is suspended afterwards.
final class PendingAnswers: @unchecked Sendable {
    // @unchecked: `timer` is configured under `state`'s lock, or in init and deinit.
    private struct State {
        var waiting: [UInt64: HTTPExchange] = [:]
        /// Deadlines in the order they were given (all requests get the same timeout, so this is
        /// also their order in time); entries of requests answered since are skipped.
        var deadlines: [(due: UInt64, id: UInt64)] = []
        var head = 0
        var lastID: UInt64 = 0
        var armed = false
        var closed = false
    }

    private let state = Mutex(State())
    private let timeout: UInt64
    private let timer: any DispatchSourceTimer
    private let expire: @Sendable (HTTPExchange) -> Void

    /// `expire`: answers a request whose deadline passed (called without any lock held).
    init(timeoutSeconds: Double, expire: @escaping @Sendable (HTTPExchange) -> Void) {
        timeout = UInt64(max(0.001, timeoutSeconds) * 1e9)
        self.expire = expire
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "pushspool.serve.deadlines"))
        timer.schedule(deadline: .distantFuture)
        timer.setEventHandler { [weak self] in self?.sweep() }
        // Resumed at once: a Dispatch source released while still suspended traps.
        timer.resume()
    }

    deinit { timer.cancel() }

    /// Records `exchange` as waiting for its answer; its id for `remove`. nil once closed: the
    /// caller answers it itself and does not suspend it.
    func add(_ exchange: HTTPExchange) -> UInt64? {
        let due = DispatchTime.now().uptimeNanoseconds + timeout
        return state.withLock { s -> UInt64? in
            guard !s.closed else { return nil }
            s.lastID += 1
            s.waiting[s.lastID] = exchange
            s.deadlines.append((due, s.lastID))
            if !s.armed {
                s.armed = true
                timer.schedule(deadline: DispatchTime(uptimeNanoseconds: due), leeway: .milliseconds(50))
            }
            return s.lastID
        }
    }

    /// The request was answered.
    func remove(_ id: UInt64) {
        state.withLock { s in
            s.waiting[id] = nil
            if s.waiting.isEmpty {
                s.deadlines.removeAll(keepingCapacity: true)
                s.head = 0
            }
        }
    }

    /// Stops recording and returns every request still waiting (for the caller to answer).
    func close() -> [HTTPExchange] {
        state.withLock { s in
            s.closed = true
            defer { s.waiting = [:]; s.deadlines = []; s.head = 0 }
            return Array(s.waiting.values)
        }
    }

    private func sweep() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { s -> [HTTPExchange] in
            var due: [HTTPExchange] = []
            while s.head < s.deadlines.count, s.deadlines[s.head].due <= now {
                if let exchange = s.waiting.removeValue(forKey: s.deadlines[s.head].id) { due.append(exchange) }
                s.head += 1
            }
            if s.head > 4096, s.head * 2 > s.deadlines.count {
                s.deadlines.removeFirst(s.head)
                s.head = 0
            }
            if s.head < s.deadlines.count {
                // At most ten wake-ups a second under load: a deadline is kept within 100 ms.
                let next = max(s.deadlines[s.head].due, now + 100_000_000)
                timer.schedule(deadline: DispatchTime(uptimeNanoseconds: next), leeway: .milliseconds(50))
            } else {
                s.armed = false
                timer.schedule(deadline: .distantFuture)
            }
            return due
        }
        for exchange in due { expire(exchange) }
    }
}
