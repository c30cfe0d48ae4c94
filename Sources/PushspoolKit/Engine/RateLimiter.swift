import Foundation
import Synchronization

/// A provider's request rate cap (`max_per_second`), shared by every job and every retry of a
/// dispatcher: each request reserves the next free moment on an evenly spaced schedule (the
/// generic cell rate algorithm, a token bucket of depth one), so no second ever carries more
/// than the cap, whatever the number of producers. Waiting happens in the caller
/// (`ProducerWait.until`, the `RetryTimer`). Its moments are monotonic (`Uptime` seconds): a
/// wall clock stepped meanwhile neither stalls nor rushes the turns.
///
/// With a `shared` bucket (a PostgreSQL registry), the cap holds across hosts too: requests
/// also spend tokens granted by the bucket (`RateGrant`, ~100 ms worth each), each grant from
/// its due moment (the bucket counts on the database's clock and answers with a delay, added to
/// this host's monotonic now: no time of day crosses hosts), and the next grant is asked for off
/// the send thread when three quarters of the current one are spent, so a push costs no round
/// trip. Tokens held past their turn by more than a grant's time are dropped (a slow host does
/// not spend them on top of the others' turns). While the bucket cannot be reached, grants are
/// made locally: each host keeps sending at the cap alone (as without a shared registry) and
/// says so once in the log.
public final class RateLimiter: Sendable {
    public let perSecond: Double
    private let interval: Double
    /// Monotonic seconds (`EngineClock.uptime`).
    private let clock: @Sendable () -> Double

    /// A bucket every host draws from, named per provider or app.
    public struct Shared: Sendable {
        public var source: any RateGrantSource
        public var bucket: String
        public var log: Log?

        public init(source: any RateGrantSource, bucket: String, log: Log? = nil) {
            self.source = source
            self.bucket = bucket
            self.log = log
        }
    }

    private struct State {
        /// The earliest moment the next request may go.
        var next: Double = 0
        /// Shared tokens in hand, and past when they are stale (their turn in the bucket long gone).
        var held = 0
        var heldUntil: Double = 0
        /// The next grant, asked ahead of need: its tokens and when the first is due (local clock).
        var pending: (count: Int, due: Double)?
        var asking = false
        /// Unreachable bucket: grants are local until then.
        var outageRetryAt: Double?
    }
    private let state = Mutex(State())
    private let shared: Shared?
    private let grantSize: Int
    /// Grants are fetched one at a time, in order.
    private let grants = DispatchQueue(label: "pushspool.rate-grants")

    /// Seconds between two tries of an unreachable bucket (local grants meanwhile).
    static let outageRetry = 5.0

    public init(perSecond: Double, shared: Shared? = nil,
                clock: @escaping @Sendable () -> Double = { Uptime.seconds }) {
        self.perSecond = perSecond
        interval = 1 / perSecond
        self.clock = clock
        self.shared = shared
        grantSize = RateGrant.size(perSecond: perSecond)
    }

    /// Reserves a moment (on `clock`) at or after `earliest` (default now) and returns it; the
    /// caller sends then.
    public func reserve(notBefore earliest: Double? = nil) -> Double {
        guard shared != nil else {
            let now = clock()
            return state.withLock { s in
                let at = max(s.next, earliest ?? now, now)
                s.next = at + interval
                return at
            }
        }
        while true {
            let now = clock()
            let (moment, ask) = state.withLock { s -> (Double?, Bool) in
                if s.held > 0, now > s.heldUntil { s.held = 0 }
                if s.held == 0, let p = s.pending {
                    s.pending = nil
                    s.held = p.count
                    s.next = max(s.next, p.due)
                    s.heldUntil = max(s.next, now) + 2 * Double(p.count) * interval
                }
                guard s.held > 0 else { return (nil, false) }
                s.held -= 1
                let at = max(s.next, earliest ?? now, now)
                s.next = at + interval
                let ask = s.held <= grantSize / 4 && s.pending == nil && !s.asking
                if ask { s.asking = true }
                return (at, ask)
            }
            if ask { grants.async { self.fetchGrant() } }
            if let moment { return moment }
            // Nothing in hand: wait for the grant under way, or ask for one now.
            grants.sync { fetchGrant() }
        }
    }

    /// Asks the bucket for the next grant unless one is already waiting to be spent.
    private func fetchGrant() {
        guard let shared else { return }
        let skip = state.withLock { s -> Bool in
            if s.pending != nil { s.asking = false; return true }
            return false
        }
        if skip { return }
        let retryAt = state.withLock { $0.outageRetryAt }
        var grant = RateGrant(count: grantSize, firstDelay: 0)
        var reached: Bool?
        if retryAt.map({ clock() >= $0 }) ?? true {
            do {
                grant = try shared.source.grant(bucket: shared.bucket, count: grantSize, perSecond: perSecond)
                reached = true
            } catch {
                reached = false
                if retryAt == nil {
                    shared.log?.warning("max_per_second \(shared.bucket): the shared bucket at \(shared.source.location) cannot be reached (\(Redaction.scrub(RegistryError.detail(error)))); holding the cap on this host alone until it answers")
                }
            }
        }
        let now = clock()
        state.withLock { s in
            if reached == true {
                s.outageRetryAt = nil
            } else if reached == false {
                s.outageRetryAt = now + Self.outageRetry
            }
            s.pending = (grant.count, now + grant.firstDelay)
            s.asking = false
        }
        if reached == true, retryAt != nil {
            shared.log?.info("max_per_second \(shared.bucket): the shared bucket answers again")
        }
    }
}
