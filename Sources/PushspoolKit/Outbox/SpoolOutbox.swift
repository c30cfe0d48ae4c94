import Foundation

/// The one spool outbox's waiter, shared by the hub queue (`HubQueue`: installations owed to
/// the hub) and the webhooks (`WebhookDelivery`: events owed to receivers). Their records are
/// durable files in the spool (written with `DurableFile`); this holds which keys have work,
/// sends at most `maxInFlight` at once, and keeps the retries with their due times
/// (`OutboxSchedule`).
///
/// Who wakes it: one thread sleeps until the earliest retry is due, or until an owner says a key
/// is ready, a send ended (`finished`, `retry`), or its backlog may have room (`wake`). There is
/// no periodic timer. `refill` runs on this thread before each turn, for an owner that reads
/// its records from disk as room is made (the webhooks' bounded window).
///
/// `send` runs on this thread, outside the lock, and must not block for long: it starts the
/// send and answers later with `finished` or `retry` from any thread. Thread-safe.
final class SpoolOutbox<Key: Hashable & Sendable>: @unchecked Sendable {   // every field is under `cond`
    private let cond = NSCondition()
    private var schedule: OutboxSchedule<Key>
    /// Set by every change: the thread turns again before it sleeps.
    private var poked = false
    private var stopping = false
    private var running = false
    private let name: String
    private let now: @Sendable () -> Double
    private var send: (@Sendable (Key) -> Void)?
    private var refill: (@Sendable () -> Void)?

    /// `now` is the clock the due times are read on (seconds); sleeps last the difference.
    init(name: String, maxInFlight: Int, now: @escaping @Sendable () -> Double) {
        self.name = name
        self.now = now
        schedule = OutboxSchedule(maxInFlight: maxInFlight)
    }

    var maxInFlight: Int { schedule.maxInFlight }

    /// Starts the thread.
    func start(send: @escaping @Sendable (Key) -> Void, refill: (@Sendable () -> Void)? = nil) {
        cond.lock()
        defer { cond.unlock() }
        guard !running, !stopping else { return }
        self.send = send
        self.refill = refill
        running = true
        let t = Thread { [self] in run() }
        t.name = name
        t.start()
    }

    /// `key` has work to send.
    func ready(_ key: Key) { change { $0.ready(key) } }

    /// `key`'s send ended.
    func finished(_ key: Key) { change { $0.finished(key) } }

    /// `key`'s send is to be tried again at `due` (on the `now` clock).
    func retry(_ key: Key, at due: Double) { change { $0.retry(key, at: due) } }

    /// Something `refill` reads may have changed.
    func wake() { change { _ in } }

    /// Starts nothing more; what is in flight ends on its own. The thread ends.
    func stop() {
        cond.lock()
        stopping = true
        cond.broadcast()
        cond.unlock()
    }

    /// Sends in flight now.
    var inFlight: Int { locked { $0.inFlight } }

    /// Where `key` stands (nil: no work).
    func state(of key: Key) -> OutboxSchedule<Key>.State? { locked { $0.state(of: key) } }

    /// Waits up to `timeout` seconds until nothing is in flight or ready to send and `busy` is
    /// false (retries waiting for their time are left). `busy` is asked under this lock: it may
    /// take its owner's lock, which is never held while calling in here.
    func drain(timeout: Double, busy: () -> Bool = { false }) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        cond.lock()
        while (!schedule.isIdle || busy()) && Date() < deadline {
            _ = cond.wait(until: deadline)
        }
        cond.unlock()
    }

    private func change(_ body: (inout OutboxSchedule<Key>) -> Void) {
        cond.lock()
        body(&schedule)
        poked = true
        cond.broadcast()
        cond.unlock()
    }

    private func locked<T>(_ body: (inout OutboxSchedule<Key>) -> T) -> T {
        cond.lock()
        defer { cond.unlock() }
        return body(&schedule)
    }

    private func run() {
        cond.lock()
        while !stopping {
            poked = false
            if let refill {
                cond.unlock()
                refill()
                cond.lock()
                // A drain waits on what `refill` read.
                cond.broadcast()
            }
            let t = now()
            let starts = schedule.take(now: t)
            if !starts.isEmpty {
                cond.unlock()
                for key in starts { send?(key) }
                cond.lock()
                continue
            }
            if poked || stopping { continue }
            if let due = schedule.nextDue() {
                _ = cond.wait(until: Date(timeIntervalSinceNow: max(due - t, 0.001)))
            } else {
                cond.wait()
            }
        }
        // The owners' closures hold their owner: let go of them with the thread.
        send = nil
        refill = nil
        running = false
        cond.broadcast()
        cond.unlock()
    }
}
