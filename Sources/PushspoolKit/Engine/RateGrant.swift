/// A share of a rate cap held in a bucket every host draws from (`max_per_second` with a
/// PostgreSQL registry): `count` tokens, the first due `firstDelay` seconds after the bucket
/// answered (then one every 1/rate seconds, the local `RateLimiter`'s spacing). The bucket may go
/// into debt: a grant taken while it is empty is not refused but scheduled after the grants
/// before it, so hosts queue for the cap instead of polling it.
public struct RateGrant: Sendable, Equatable {
    public var count: Int
    public var firstDelay: Double

    public init(count: Int, firstDelay: Double) {
        self.count = count
        self.firstDelay = firstDelay
    }

    /// Tokens per grant: about 100 ms worth of the cap (one round trip per grant, not per
    /// push), at least one.
    public static func size(perSecond: Double) -> Int { max(1, Int(perSecond / 10)) }

    /// The grant of `count` tokens that left the bucket holding `after` (negative: in debt).
    /// Its first token is due once the bucket, refilling at `perSecond`, is out of the debt the
    /// grants before it left: after them.
    public static func taken(count: Int, leaving after: Double, perSecond: Double) -> RateGrant {
        RateGrant(count: count, firstDelay: max(0, -(after + Double(count))) / perSecond)
    }
}

/// Where a shared rate cap's grants come from (`SharedRateGrants`: the PostgreSQL registry).
public protocol RateGrantSource: Sendable {
    /// Takes `count` tokens from bucket `name`, refilled at `perSecond` (saving none up).
    func grant(bucket name: String, count: Int, perSecond: Double) throws -> RateGrant
    /// Where the bucket lives, redacted (for the log line of an outage).
    var location: String { get }
}
