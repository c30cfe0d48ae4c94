import Dispatch
import Foundation
import PushspoolCore
import Synchronization

/// The final outcome of one target after all its attempts.
public struct TargetOutcome: Sendable {
    public var status: DeliveryStatus
    public var attempts: Int
    public var result: ProviderResult
}

/// What became of one target handed to the pool.
public enum TargetEnd: Sendable {
    /// Its final outcome: logged and counted.
    case final(TargetOutcome)
    /// Not sent (or its retry not waited for) because its job is stopping: not final, not
    /// logged, not counted; the resumed job sends it.
    case abandoned
}

/// The Dispatch worker pool: at most `concurrency` notifications in flight per provider across
/// all jobs (a `SlotGate` each, which wakes a producer for a batch of free slots), each driven through the one retry policy. Retries keep
/// their slot while they wait, so a struggling service slows intake instead of piling up work —
/// its own intake only: a throttled FCM fills FCM's slots, never APNs's. Every attempt is bounded
/// (`attemptTimeout`): a provider that never calls back costs a retry, never a hung job.
///
/// Its due times and waits (a provider's quiet time, a retry's due time, the rate cap's turns) are
/// monotonic (`Uptime` seconds): a wall clock stepped meanwhile neither stalls nor rushes them.
public final class WorkerPool: Sendable {
    public let concurrency: Int
    public let policy: RetryPolicy
    /// How long an attempt may go unanswered before it counts as a transient failure. Well above
    /// the transports' own 30 s request timeout plus a 30 s token fetch: it fires only when a
    /// provider loses a request outright.
    public static let defaultAttemptTimeout = 120.0
    let watchdog: AttemptWatchdog
    private let slotsByProvider = Mutex<[ObjectIdentifier: SlotGate]>([:])
    private let timers = DispatchQueue(label: "pushspool.retry-timers", attributes: .concurrent)
    /// Every waiting retry, on one timer armed for the earliest.
    private let waiting: RetryTimer
    private let random: @Sendable () -> Double
    private let metrics: Metrics?

    public init(concurrency: Int, policy: RetryPolicy, metrics: Metrics? = nil, attemptTimeout: Double = defaultAttemptTimeout,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.concurrency = max(1, concurrency)
        self.policy = policy
        self.random = random
        self.metrics = metrics
        watchdog = AttemptWatchdog(timeout: attemptTimeout)
        waiting = RetryTimer(queue: timers)
    }

    /// `submit` for a caller that never stops it, so every target ends final, with a `finish`
    /// that records the outcome at once: the slot is free when it returns.
    public func submit(_ request: SendRequest, via state: ProviderState, finish: @escaping @Sendable (TargetOutcome) -> Void) {
        submit(request, via: state) { end, release in
            if case .final(let outcome) = end { finish(outcome) }
            release()
        }
    }

    /// Blocks the calling producer until a slot is free (and the provider is not asking for
    /// quiet), then sends `request` with retries. `record` runs exactly once, on any thread, with
    /// the final outcome and the slot's `release`: the slot stays taken until the caller has
    /// recorded the outcome (its result-log line written) and calls `release`, so that after a
    /// crash only requests in flight are sent again. The producer waits here as `wait` says (its
    /// `Handout` released first, which also frees the slots of the targets it holds), and stops
    /// when `wait.halted`. With a handout, a provider that answers at once gets the first attempt
    /// at the handout's next release, and a batching provider's target joins the batch its
    /// handout fills (one slot per batch).
    func submit(_ request: consuming SendRequest, via state: ProviderState, wait: ProducerWait = .holdingNothing,
                record: @escaping @Sendable (TargetEnd, _ release: @escaping @Sendable () -> Void) -> Void) {
        // The service asked for quiet: sleep until it ends (it may be pushed back meanwhile), or
        // until a stop rings.
        while true {
            let quietEnds = state.quietEnds
            if quietEnds == 0 || quietEnds <= Uptime.seconds { break }
            if !wait.until(quietEnds) { break }
            if state.quietEnds <= quietEnds { break }
        }
        if let handout = wait.handout, let batching = state.batching, let key = batching.batchKey(request) {
            return submit(request, joining: key, of: batching, in: handout, via: state, wait: wait, record: record)
        }
        let slots = slots(for: state)
        guard take(slots, via: state, wait: wait) else { return record(.abandoned, {}) }
        var held: Operation.Held?
        if let handout = wait.handout, let immediate = state.immediate {
            // Prepared now: the handout holds the provider's output, and the request only for a retry.
            held = .immediate(immediate.prepare(request), immediate, handout)
        }
        // The request moved into the operation, not copied (a copy retained and released each of
        // its strings). The slot's release captures the gate alone: it is its own context, no
        // allocation.
        let number = request.attempt
        attempt(Operation(attempt: number, work: .send(consume request), held: held), via: state, previous: nil, isStopping: wait.halted,
                done: Done(record: record, release: { [slots] in slots.release() }))
    }

    /// A batching provider's target: it joins the batch `handout` fills for its message, or opens
    /// one, which takes a slot and a turn of the rate cap. Its retries go alone (`call`).
    private func submit(_ request: SendRequest, joining key: BatchKey, of batching: any BatchingProvider, in handout: Handout,
                        via state: ProviderState, wait: ProducerWait,
                        record: @escaping @Sendable (TargetEnd, _ release: @escaping @Sendable () -> Void) -> Void) {
        let batch: HandoutBatch
        if let open = handout.batch(for: batching, key: key) {
            if wait.halted() { return record(.abandoned, {}) }
            batch = open
        } else {
            let slots = slots(for: state)
            guard take(slots, via: state, wait: wait) else { return record(.abandoned, {}) }
            batch = handout.open(for: batching, key: key) { slots.release() }
        }
        batch.join()
        attempt(Operation(attempt: request.attempt, work: .send(request), held: .batch(batch, member: key.member, handout)), via: state,
                previous: nil, isStopping: wait.halted, done: Done(record: record, release: { [batch] in batch.leave() }))
    }

    /// Takes a slot of `state`'s, then a turn of its rate cap, waiting as `wait` says; false
    /// (the slot given back) when stopped meanwhile: no new target starts after a stop (or a
    /// cancel or pause of its job).
    private func take(_ slots: SlotGate, via state: ProviderState, wait: ProducerWait) -> Bool {
        if !slots.tryTake() {
            wait.release()
            slots.take()
        }
        if wait.halted() || state.limiter.map({ limiter in
            state.waitUntilReady()
            return !wait.until(limiter.reserve())
        }) == true {
            slots.release()
            return false
        }
        return true
    }

    /// Carries one call to a provider that is not a notification (a hub installation write,
    /// `InstallationWriter`) through the path a send takes, minus the slot: the provider's quiet
    /// time and rate cap are waited out on a timer (no thread blocked), a paused provider fails it
    /// at once, every answer goes through the one retry policy with this pool's random source, and
    /// the attempt is bounded by the watchdog. `call` makes one attempt (numbered from 1) and calls
    /// back once; `done` runs once, with `.abandoned` when `isStopping` cut it short.
    public func perform(via state: ProviderState, isStopping: @escaping @Sendable () -> Bool = { false },
                        _ call: @escaping @Sendable (_ attempt: Int, _ completion: @escaping @Sendable (ProviderResult) -> Void) -> Void,
                        done: @escaping @Sendable (TargetEnd) -> Void) {
        let operation = Operation(attempt: 1, work: .call(call))
        retry(operation, via: state, previous: nil, due: max(Uptime.seconds, state.quietEnds), isStopping: isStopping,
              done: Done(record: { end, _ in done(end) }, release: {}))
    }

    /// How a target or call ends, once: `record` is handed its end and `release` (the slot's, or
    /// the batch's). Two closures kept side by side, so that the producer's `record` is not
    /// wrapped in a closure of the pool's per target.
    struct Done: Sendable {
        let record: @Sendable (TargetEnd, _ release: @escaping @Sendable () -> Void) -> Void
        let release: @Sendable () -> Void

        func callAsFunction(_ end: TargetEnd) { record(end, release) }
    }

    /// What the pool attempts until the policy finishes it: a notification or another call to the
    /// provider, and the number of the attempt to make next. What it carries is in one object, so
    /// a copy (into its attempt in flight, `PoolAttempt`, and a retry's wait) is one reference.
    struct Operation: Sendable {
        enum Work: Sendable {
            /// A notification, sent through the state's provider.
            case send(SendRequest)
            /// Another call (numbered from 1), which calls back once.
            case call(@Sendable (Int, @escaping @Sendable (ProviderResult) -> Void) -> Void)
        }
        /// Where the first attempt goes when a producer's `Handout` holds it; retries never.
        enum Held: Sendable {
            /// Prepared for a provider that answers at once: answered at the handout's release.
            case immediate(PreparedSend, any ImmediateProvider, Handout)
            /// In the batch the handout fills.
            case batch(HandoutBatch, member: String, Handout)
        }
        final class Load: Sendable {
            /// The notification, kept on its own rather than in `Work`: a class's `let` is passed
            /// on borrowed, where binding an enum's payload copied it (each of its strings
            /// retained and released).
            let request: SendRequest?
            let call: (@Sendable (Int, @escaping @Sendable (ProviderResult) -> Void) -> Void)?
            let held: Held?
            init(_ work: Work, held: Held?) {
                switch work {
                case .send(let request):
                    self.request = request
                    call = nil
                case .call(let call):
                    request = nil
                    self.call = call
                }
                self.held = held
            }
        }
        var attempt: Int
        let load: Load
        /// Whether the next attempt is the first (the one a handout may hold).
        var isFirst = true

        init(attempt: Int, work: Work, held: Held? = nil) {
            self.attempt = attempt
            load = Load(work, held: held)
        }

        var held: Held? { isFirst ? load.held : nil }

        /// The platform of the notification it sends, whose failed answers its provider notes
        /// (`ProviderState.noteFailedAnswer`); nil: not a notification.
        var platform: Platform? { load.request?.platform }

        /// Makes the attempt numbered `attempt`.
        func start(via state: ProviderState, _ completion: @escaping @Sendable (ProviderResult) -> Void) {
            if let call = load.call { return call(attempt, completion) }
            // The first attempt sends the request as it came; only a retry's is a copy with its number.
            if load.request!.attempt == attempt { return send(load.request!, via: state, completion) }
            var numbered = load.request!
            numbered.attempt = attempt
            send(numbered, via: state, completion)
        }

        private func send(_ request: SendRequest, via state: ProviderState, _ completion: @escaping @Sendable (ProviderResult) -> Void) {
            if case .batch(let batch, let member, let handout)? = held {
                return handout.add(request, member: member, to: batch, answer: completion)
            }
            state.provider.send(request, completion: completion)
        }
    }

    private func slots(for state: ProviderState) -> SlotGate {
        slotsByProvider.withLock { all in
            if let s = all[ObjectIdentifier(state)] { return s }
            let s = SlotGate(capacity: concurrency)
            all[ObjectIdentifier(state)] = s
            return s
        }
    }

    private func attempt(_ request: Operation, via state: ProviderState, previous: Disposition?,
                         isStopping: @escaping @Sendable () -> Bool, done: Done) {
        if let reason = state.pausedReason {
            done(.final(TargetOutcome(status: .failed, attempts: request.attempt - 1,
                                      result: ProviderResult(.credentialsBroken, code: "paused", reason: "provider \(state.name) paused: \(reason)"))))
            return
        }
        let attempt = PoolAttempt(pool: self, operation: request, state: state, previous: previous, isStopping: isStopping, done: done)
        // Answered by the handout's release, on the producer's thread: no deadline to watch.
        if case .immediate(let prepared, let provider, let handout)? = request.held {
            return handout.send(prepared, to: provider) { [attempt] result in attempt.pool.settle(attempt, result) }
        }
        watchdog.bound(attempt) { request.start(via: state, $0) }
    }

    /// What the policy makes of `attempt`'s answer (the watchdog's `no-answer` included): the
    /// target's end, a pause, or a retry. Every answer passes here, whoever made the attempt.
    func settle(_ attempt: PoolAttempt, _ result: ProviderResult) {
        let request = attempt.operation, state = attempt.state, done = attempt.done
        metrics?.requestDuration(provider: state.name, seconds: Double(DispatchTime.now().uptimeNanoseconds - attempt.started) / 1e9)
        // A failed answer is noted once.
        if result.disposition != .delivered, let platform = request.platform { state.noteFailedAnswer(result, platform: platform) }
        switch policy.decide(result.disposition, attempt: request.attempt, previous: attempt.previous, random: random) {
        case .finish(let status):
            if status == .delivered { state.noteDelivery() }
            if result.disposition == .senderRefused { state.noteRefusal(result.reason ?? result.code ?? "refused") }
            done(.final(TargetOutcome(status: status, attempts: request.attempt, result: result)))
        case .pauseProvider:
            state.pause(result.reason ?? result.code ?? "credentials rejected")
            done(.final(TargetOutcome(status: .failed, attempts: request.attempt, result: result)))
        case .retry(let after):
            metrics?.retry(provider: state.name)
            switch result.disposition {
            case .retry(_?) where !result.waitIsTargets: state.quiet(for: after)
            case .retry(nil), .reconnect: state.noteTransientFailure(policy)
            default: break
            }
            var following = request
            following.attempt += 1
            following.isFirst = false
            retry(following, via: state, previous: result.disposition, due: Uptime.seconds + max(0, after),
                  isStopping: attempt.isStopping, done: done)
        }
    }

    /// Attempts `request` at `due` (a retry, or the first attempt of `perform`), waiting on the
    /// pool's one retry timer; a stop rings it (`StopBell`), so a retry waiting out a long
    /// Retry-After never holds up a stop. It counts against the provider's rate cap like any
    /// request: once due, it reserves its turn. `due`: `Uptime` seconds.
    private func retry(_ request: Operation, via state: ProviderState, previous: Disposition?, due: Double, reserved: Bool = false,
                       isStopping: @escaping @Sendable () -> Bool, done: Done) {
        if isStopping() { return done(.abandoned) }
        var due = due, reserved = reserved
        if !reserved, due <= Uptime.seconds, let limiter = state.limiter {
            due = limiter.reserve()
            reserved = true
        }
        guard due > Uptime.seconds else {
            return timers.async { [self] in attempt(request, via: state, previous: previous, isStopping: isStopping, done: done) }
        }
        waiting.schedule(at: due, isStopping: isStopping, abandon: { done(.abandoned) }) { [self, due, reserved] in
            retry(request, via: state, previous: previous, due: due, reserved: reserved, isStopping: isStopping, done: done)
        }
    }
}

/// Bounds every attempt in flight: `bound` starts one, and whichever comes first, the answer or
/// the deadline, is its result, exactly once. One sweep timer for the pool, armed for the earliest
/// deadline while attempts are in flight (never while none is), and one table slot per attempt in
/// flight (bounded by the slots), instead of a timer per request. The table is an array of the
/// attempts themselves, reused through a free list: an attempt knows its slot, and a late answer
/// for a slot reused since is told apart by identity. No hashing and no closure per attempt.
final class AttemptWatchdog: @unchecked Sendable {   // the timer is created in init and scheduled under the table's lock
    let timeout: Double
    private let timeoutNanos: UInt64
    private struct Table {
        var slots: [PoolAttempt?] = []
        var free: [Int] = []
        /// Whether the sweep timer is armed (for the earliest deadline it saw).
        var armed = false

        mutating func insert(_ attempt: PoolAttempt) {
            let index: Int
            if let reused = free.popLast() {
                index = reused
                slots[index] = attempt
            } else {
                index = slots.count
                slots.append(attempt)
            }
            attempt.slot.store(index, ordering: .relaxed)
        }

        /// Takes `attempt` out if it still waits in its slot.
        mutating func remove(_ attempt: PoolAttempt) -> Bool {
            let index = attempt.slot.load(ordering: .relaxed)
            guard index >= 0, index < slots.count, slots[index] === attempt else { return false }
            slots[index] = nil
            free.append(index)
            return true
        }
    }
    private let table = Mutex(Table())
    private let sweeper: any DispatchSourceTimer

    init(timeout: Double) {
        self.timeout = timeout
        timeoutNanos = UInt64(timeout * 1e9)
        sweeper = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        sweeper.schedule(deadline: .distantFuture)
        sweeper.setEventHandler { [weak self] in self?.sweep() }
        sweeper.resume()
    }

    deinit { sweeper.cancel() }

    /// Runs `send` (which calls back once with the answer) and settles `attempt` with that
    /// answer, or with a retryable `no-answer` once `timeout` has passed since it started,
    /// whichever comes first; the other is dropped.
    func bound(_ attempt: PoolAttempt, _ send: (@escaping @Sendable (ProviderResult) -> Void) -> Void) {
        let due = attempt.started + timeoutNanos
        table.withLock { t in
            // The first attempt in flight arms the sweep for its deadline (later ones are later).
            if !t.armed { arm(at: due, &t) }
            t.insert(attempt)
        }
        // Captures the attempt alone: it is the closure's context, no allocation.
        send { [attempt] result in attempt.answered(result) }
    }

    /// True when the attempt was still waiting: the answer counts. False: it expired already.
    func answered(_ attempt: PoolAttempt) -> Bool {
        table.withLock { $0.remove(attempt) }
    }

    /// Arms the sweep for `due` (`DispatchTime` nanoseconds).
    private func arm(at due: UInt64, _ t: inout Table) {
        t.armed = true
        sweeper.schedule(deadline: DispatchTime(uptimeNanoseconds: due), leeway: .milliseconds(Int(min(1, timeout / 4) * 250)))
    }

    private func sweep() {
        let now = DispatchTime.now().uptimeNanoseconds
        let expired = table.withLock { t -> [PoolAttempt] in
            var late: [PoolAttempt] = []
            var next = UInt64.max
            for i in t.slots.indices {
                guard let attempt = t.slots[i] else { continue }
                let due = attempt.started + timeoutNanos
                if due <= now {
                    if t.remove(attempt) { late.append(attempt) }
                } else {
                    next = min(next, due)
                }
            }
            // Armed again for the earliest deadline left; none left: asleep until the next attempt.
            t.armed = false
            if next != .max { arm(at: next, &t) }
            return late
        }
        for attempt in expired {
            attempt.pool.settle(attempt, ProviderResult(.retry(after: nil), code: "no-answer",
                                                        reason: "no answer from \(attempt.state.name) within \(Int(timeout)) s"))
        }
    }
}
