import Dispatch
import Foundation
import PushspoolCore
import PushspoolHTTP
import Synchronization

/// Run-time health of one provider, shared by every job of a dispatcher: paused after broken
/// credentials (its targets fail at once instead of hammering the service), and throttled while
/// the service asked for quiet (Retry-After on a whole-service error).
///
/// A pause lasts `pauseDuration` (10 minutes): a `run --once` from cron ends long before, and a
/// long-running `run` tries the service again later instead of staying paused until restarted
/// (credentials may have been fixed, a token endpoint may be back).
public final class ProviderState: Sendable {
    /// What the engine sends through: the provider made from the config.
    public let provider: any PushProvider
    /// The provider, when it answers at once (the sandbox): a producer's `Handout` batches its requests.
    let immediate: (any ImmediateProvider)?
    /// The provider, when its requests carry many targets (HMS): a producer's `Handout` fills its batches.
    let batching: (any BatchingProvider)?
    /// Its failed answers, as the worker pool classifies each answer (`noteFailedAnswer`).
    private let errors = Mutex(RecentErrorRing(capacity: ProviderState.recentErrors))
    /// Failed answers kept per provider.
    static let recentErrors = 20
    /// The connections of the HTTP clients it made (`ProviderClients`); nil: it counts none.
    private let connections: (@Sendable () -> HTTPConnectionCount)?
    public let pauseDuration: Double
    /// `senderRefused` answers in a row (no delivery between them) that pause the provider.
    public static let refusalsBeforePause = 5

    /// Transient failures in a row (no delivery between) after which new targets hold back.
    public static let failuresBeforeThrottle = 8

    private struct State {
        var refusalsInARow = 0
        var failuresInARow = 0
        var pausedReason: String?
        /// Monotonic: a pause lasts its seconds whatever the wall clock does meanwhile.
        var pausedUntil: DispatchTime = .init(uptimeNanoseconds: 0)
        /// Monotonic too (`EngineClock.uptime` seconds; 0: never quiet), so that a wall clock
        /// stepped meanwhile neither stalls nor rushes the targets waiting it out.
        var quietEnds: Double = 0
    }
    private let state = Mutex(State())
    /// Set (for good) by the first refusal, transient failure, pause or quiet: until then the
    /// checks made for every target (`pausedReason`, `quietEnds`, `noteDelivery`) are one atomic
    /// load instead of a lock and a clock read.
    private let disturbed = Atomic<Bool>(false)
    private let onPause: @Sendable (String) -> Void
    /// Where this provider's pauses and quiet times are shared with other hosts (a PostgreSQL
    /// registry); nil: this host only.
    let sharing: (any ProviderPauseSharing)?
    /// The end of the last quiet time told to the other hosts (`quietEnds`' clock).
    private let sharedQuiet = Mutex<Double>(0)

    /// Quiet times are set on its `uptime` (monotonic), shown (`quietUntil`) and failed answers
    /// stamped on its `wall`.
    private let clock: EngineClock

    /// `max_per_second`: every request of this provider (first attempts and retries) takes its turn.
    public let limiter: RateLimiter?

    /// `rateGrants`: where the cap is shared with other hosts (a PostgreSQL registry), in
    /// bucket `provider:<name>`.
    /// `connections`: how many connections its HTTP clients hold now (`ProviderClients.count`).
    public init(provider: any PushProvider, name: String? = nil, pauseDuration: Double = 600, maxPerSecond: Double? = nil,
                rateGrants: (any RateGrantSource)? = nil, sharing: (any ProviderPauseSharing)? = nil, log: Log? = nil,
                connections: (@Sendable () -> HTTPConnectionCount)? = nil, clock: EngineClock = .system,
                onPause: @escaping @Sendable (String) -> Void = { _ in }) {
        self.clock = clock
        self.provider = provider
        immediate = provider as? any ImmediateProvider
        batching = provider as? any BatchingProvider
        self.connections = connections
        self.sharing = sharing
        let name = name ?? provider.name
        self.name = name
        limiter = maxPerSecond.map { rate in
            RateLimiter(perSecond: rate, shared: rateGrants.map { .init(source: $0, bucket: "provider:" + name, log: log) }, clock: clock.uptime)
        }
        self.pauseDuration = pauseDuration
        self.onPause = onPause
    }

    /// Blocks the calling (producer) thread until a request could leave at once
    /// (`PushProvider.whenReady`): asked before the rate cap admits one.
    func waitUntilReady() {
        let ready = DispatchSemaphore(value: 0)
        provider.whenReady { ready.signal() }
        ready.wait()
    }

    /// Its name in the config (`providers.<name>`): what routes, result logs, metrics and pause
    /// records call it.
    public let name: String

    /// Why the provider is paused, while it is.
    public var pausedReason: String? {
        guard disturbed.load(ordering: .acquiring) else { return nil }
        return state.withLock { $0.pausedUntil > DispatchTime.now() ? $0.pausedReason : nil }
    }

    public func pause(_ reason: String) {
        if pause(reason, for: pauseDuration) { share(ProviderPause(provider: name, kind: .paused(reason), seconds: pauseDuration)) }
    }

    /// Pauses unless paused already; true when it did.
    private func pause(_ reason: String, for seconds: Double) -> Bool {
        let first = state.withLock { s -> Bool in
            disturbed.store(true, ordering: .releasing)
            let now = DispatchTime.now()
            guard s.pausedUntil <= now else { return false }
            s.pausedReason = reason
            s.pausedUntil = now + max(0, seconds)
            return true
        }
        if first { onPause(reason) }
        return first
    }

    /// What another host learned about this provider (`ProviderPauseSharing.current`), applied
    /// here without telling the others again.
    func apply(_ shared: ProviderPause) {
        switch shared.kind {
        case .paused(let reason): _ = pause(reason, for: shared.seconds)
        case .quiet: quietHere(until: clock.uptime() + shared.seconds)
        }
    }

    /// Tells the other hosts, off the caller's thread (an answer's completion), never failing it.
    private func share(_ pause: ProviderPause) {
        guard let sharing else { return }
        DispatchQueue.global(qos: .utility).async { try? sharing.publish(pause) }
    }

    /// Counts a `senderRefused` answer; the provider pauses when they keep coming.
    public func noteRefusal(_ reason: String) {
        let pauseNow = state.withLock { s -> Bool in
            disturbed.store(true, ordering: .releasing)
            s.refusalsInARow += 1
            return s.refusalsInARow >= Self.refusalsBeforePause
        }
        if pauseNow { pause("\(reason) (\(Self.refusalsBeforePause) targets in a row)") }
    }

    /// A delivery: refusals so far were about particular devices, and the service is up.
    public func noteDelivery() {
        guard disturbed.load(ordering: .acquiring) else { return }
        state.withLock { s in
            if s.refusalsInARow != 0 { s.refusalsInARow = 0 }
            if s.failuresInARow != 0 { s.failuresInARow = 0 }
        }
    }

    /// A transient failure (5xx, no answer). When they keep coming the service is down: new
    /// targets hold back for an exponentially growing while (capped by the policy), instead of
    /// each burning its attempts against an outage; targets already started retry on their own.
    public func noteTransientFailure(_ policy: RetryPolicy) {
        state.withLock { s in
            disturbed.store(true, ordering: .releasing)
            s.failuresInARow += 1
            let level = s.failuresInARow / Self.failuresBeforeThrottle
            guard level > 0 else { return }
            let pause = min(policy.maxDelay, policy.baseDelay * Double(1 << min(level, 30)))
            s.quietEnds = max(s.quietEnds, clock.uptime() + pause)
        }
    }

    /// New targets wait `seconds` from now (a retry-after on one target says the service is busy).
    public func quiet(for seconds: Double) {
        let ends = clock.uptime() + seconds
        quietHere(until: ends)
        // Told to the other hosts when it reaches a second or more past what they were told.
        let tell = sharing != nil && seconds > 0 && sharedQuiet.withLock { told -> Bool in
            guard ends - told >= 1 else { return false }
            told = ends
            return true
        }
        if tell { share(ProviderPause(provider: name, kind: .quiet, seconds: seconds)) }
    }

    /// New targets wait until the wall clock, as set now, reads `date`: a wall time made a
    /// monotonic one once.
    public func quiet(until date: Date) {
        quiet(for: date.timeIntervalSince(clock.wall()))
    }

    private func quietHere(until ends: Double) {
        state.withLock { s in
            disturbed.store(true, ordering: .releasing)
            s.quietEnds = max(s.quietEnds, ends)
        }
    }

    /// An answer that is not a delivery, for `status`, the System page and
    /// `pushspool_provider_errors_total` (its handle never kept: `RecentError`).
    func noteFailedAnswer(_ result: ProviderResult, platform: Platform) {
        let noted = RecentError(result, platform: platform, at: clock.wall().timeIntervalSince1970)
        errors.withLock { $0.note(noted) }
    }

    /// Its connections, requests in flight and recent failed answers now: what this process
    /// reports in its presence record (`status`, the System page) and its metrics.
    public func runtime() -> ProviderRuntime {
        let count = connections?() ?? HTTPConnectionCount(open: 0, inFlight: 0)
        let ring = errors.withLock { $0 }
        return ProviderRuntime(name: name, connections: count.open, inFlight: count.inFlight,
                               recentErrors: ring.newestFirst, errorTotals: ring.totals)
    }

    /// When the quiet time ends, in its clock's `uptime` seconds (monotonic); 0 unless something
    /// asked for quiet. What the worker pool waits for.
    var quietEnds: Double {
        guard disturbed.load(ordering: .acquiring) else { return 0 }
        return state.withLock { $0.quietEnds }
    }

    /// When the quiet time ends, on the wall clock (for people); `.distantPast` unless something
    /// asked for quiet.
    public var quietUntil: Date {
        let ends = quietEnds
        return ends == 0 ? .distantPast : clock.wall(atUptime: ends)
    }
}
