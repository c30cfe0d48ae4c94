import Foundation

/// `max_per_second` held across hosts (schema 7): one token bucket per provider and per app in
/// `rate_buckets`, refilled by the database's clock (never a host's: clock skew does not
/// matter), drawn in grants of about 100 ms worth by one statement each.
public final class SharedRateGrants: RateGrantSource {
    private let pool: PostgresPool
    public let location: String

    /// On the process's one pool: each limiter asks for one grant at a time, ahead of need.
    init(pool: PostgresPool) {
        location = RegistryLocation.redacted(pool.uri)
        self.pool = pool
    }

    /// On a small pool of its own (a test's host).
    public convenience init(uri: String) { self.init(pool: PostgresPool(uri: uri, maxConnections: 2)) }

    public func grant(bucket name: String, count: Int, perSecond: Double) throws -> RateGrant {
        let after = try pool.withConnection(waitingAtMost: 2) { c in
            try c.query(Self.take, [name, "\(count)", "\(perSecond)"]).double(0, 0)
        }
        return RateGrant.taken(count: count, leaving: after, perSecond: perSecond)
    }

    /// Refills the bucket for the time since it was last drawn, then takes the grant, going into
    /// debt; returns what is left. Its capacity is zero: idle time is not saved up as a burst (a
    /// rested bucket's grant is due at once and spent at the cap's pace, as the local limiter
    /// does), so the tokens are the (negated) time the grants already made reach into the future.
    static let take = """
        INSERT INTO rate_buckets(name, tokens, refilled_at)
        VALUES($1, -$2::float8, extract(epoch from clock_timestamp()))
        ON CONFLICT (name) DO UPDATE SET
            tokens = least(0, rate_buckets.tokens
                + (extract(epoch from clock_timestamp()) - rate_buckets.refilled_at) * $3::float8) - $2::float8,
            refilled_at = extract(epoch from clock_timestamp())
        RETURNING tokens
        """
}
