import Dispatch
import Foundation
import PushspoolCore
import Synchronization

/// The final outcome of one target after all its attempts.
public struct TargetOutcome: Sendable {
    public var status: DeliveryStatus
    public var attempts: Int
    public var result: ProviderResult
    /// Not final: the dispatcher is stopping, so the target was not sent (or its retry was not
    /// waited for). It is not logged, and the resumed job sends it.
    public var abandoned = false

    static let stopping = TargetOutcome(status: .failed, attempts: 0,
                                        result: ProviderResult(.retry(after: nil), code: "stopping", reason: "the dispatcher is stopping"),
                                        abandoned: true)
}

/// The Dispatch worker pool: at most `concurrency` notifications in flight per provider across
/// all jobs (a counting semaphore each), each driven through the one retry policy. Retries keep
/// their slot while they wait, so a struggling service slows intake instead of piling up work —
/// its own intake only: a throttled FCM fills FCM's slots, never APNs's.
public final class WorkerPool: Sendable {
    public let concurrency: Int
    public let policy: RetryPolicy
    private let slotsByProvider = Mutex<[ObjectIdentifier: DispatchSemaphore]>([:])
    private let timers = DispatchQueue(label: "pushspool.retry-timers", attributes: .concurrent)
    private let random: @Sendable () -> Double
    private let metrics: Metrics?

    public init(concurrency: Int, policy: RetryPolicy, metrics: Metrics? = nil,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.concurrency = max(1, concurrency)
        self.policy = policy
        self.random = random
        self.metrics = metrics
    }

    /// Blocks the calling producer until a slot is free (and the provider is not asking for
    /// quiet), then sends `request` with retries. `finish` runs exactly once, on any thread.
    public func submit(_ request: SendRequest, via state: ProviderState,
                       isStopping: @escaping @Sendable () -> Bool = { false },
                       finish: @escaping @Sendable (TargetOutcome) -> Void) {
        // The service asked for quiet: wait, in short naps so that a stop is not held up.
        while !isStopping() {
            let wait = state.quietUntil.timeIntervalSinceNow
            if wait <= 0 { break }
            Thread.sleep(forTimeInterval: min(wait, 0.2))
        }
        let slots = slots(for: state)
        slots.wait()
        // Stopped while waiting for a slot, or for the provider's rate cap: no new target
        // starts after a stop (or a cancel or pause of its job).
        if isStopping() || state.limiter.map({ !RateLimiter.wait(until: $0.reserve(), halted: isStopping) }) == true {
            slots.signal()
            return finish(.stopping)
        }
        attempt(request, via: state, previous: nil, isStopping: isStopping) { [slots] outcome in
            // The outcome is recorded (its result-log line written) before the slot is given to
            // the next target: after a crash, only requests in flight are sent again.
            finish(outcome)
            slots.signal()
        }
    }

    private func slots(for state: ProviderState) -> DispatchSemaphore {
        slotsByProvider.withLock { all in
            if let s = all[ObjectIdentifier(state)] { return s }
            let s = DispatchSemaphore(value: concurrency)
            all[ObjectIdentifier(state)] = s
            return s
        }
    }

    private func attempt(_ request: SendRequest, via state: ProviderState, previous: Disposition?,
                         isStopping: @escaping @Sendable () -> Bool, done: @escaping @Sendable (TargetOutcome) -> Void) {
        if let reason = state.pausedReason {
            done(TargetOutcome(status: .failed, attempts: request.attempt - 1,
                               result: ProviderResult(.credentialsBroken, code: "paused", reason: "provider \(state.name) paused: \(reason)")))
            return
        }
        let started = DispatchTime.now().uptimeNanoseconds
        state.provider.send(request) { [self] result in
            metrics?.requestDuration(provider: state.name, seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
            switch policy.decide(result.disposition, attempt: request.attempt, previous: previous, random: random) {
            case .finish(let status):
                if status == .delivered { state.noteDelivery() }
                if result.disposition == .senderRefused { state.noteRefusal(result.reason ?? result.code ?? "refused") }
                done(TargetOutcome(status: status, attempts: request.attempt, result: result))
            case .pauseProvider:
                state.pause(result.reason ?? result.code ?? "credentials rejected")
                done(TargetOutcome(status: .failed, attempts: request.attempt, result: result))
            case .retry(let after):
                metrics?.retry(provider: state.name)
                switch result.disposition {
                case .retry(_?): state.quiet(until: Date(timeIntervalSinceNow: after))
                case .retry(nil), .reconnect: state.noteTransientFailure(policy)
                default: break
                }
                var following = request
                following.attempt += 1
                retry(following, via: state, previous: result.disposition, due: Date(timeIntervalSinceNow: max(0, after)),
                      isStopping: isStopping, done: done)
            }
        }
    }

    /// Sends `request` again at `due`, looking at most every 250 ms whether the dispatcher is
    /// stopping: a retry waiting out a long Retry-After never holds up a stop. A retry counts
    /// against the provider's rate cap like any request: once due, it reserves its turn.
    private func retry(_ request: SendRequest, via state: ProviderState, previous: Disposition, due: Date, reserved: Bool = false,
                       isStopping: @escaping @Sendable () -> Bool, done: @escaping @Sendable (TargetOutcome) -> Void) {
        if isStopping() { return done(.stopping) }
        var due = due, reserved = reserved
        if !reserved, due.timeIntervalSinceNow <= 0, let limiter = state.limiter {
            due = Date(timeIntervalSince1970: limiter.reserve())
            reserved = true
        }
        let left = due.timeIntervalSinceNow
        guard left > 0 else {
            return timers.async { [self] in attempt(request, via: state, previous: previous, isStopping: isStopping, done: done) }
        }
        timers.asyncAfter(deadline: .now() + min(left, 0.25)) { [self, due, reserved] in
            retry(request, via: state, previous: previous, due: due, reserved: reserved, isStopping: isStopping, done: done)
        }
    }
}
