import Synchronization

/// Connections a client holds open now and the requests it has been given that are not answered
/// yet: what `status`, the dashboard's System page and `pushspool_provider_connections` show per
/// provider. The transport's own threads move the counts (one relaxed atomic add per change);
/// anyone reads them.
public final class ConnectionGauge: Sendable {
    private let open = Atomic<Int>(0)
    private let inFlight = Atomic<Int>(0)

    public init() {}

    /// Connections open now (HTTP/2: sessions up, draining ones included; HTTP/1.1: transfers
    /// holding a connection), and requests not answered yet.
    public var count: HTTPConnectionCount {
        HTTPConnectionCount(open: max(0, open.load(ordering: .relaxed)), inFlight: max(0, inFlight.load(ordering: .relaxed)))
    }

    func opened(_ n: Int = 1) { open.add(n, ordering: .relaxed) }
    func closed(_ n: Int = 1) { open.subtract(n, ordering: .relaxed) }
    func started(_ n: Int = 1) { inFlight.add(n, ordering: .relaxed) }
    func answered(_ n: Int = 1) { inFlight.subtract(n, ordering: .relaxed) }
}

/// A snapshot of a `ConnectionGauge` (or the sum of several).
public struct HTTPConnectionCount: Sendable, Equatable {
    public var open: Int
    public var inFlight: Int

    public init(open: Int, inFlight: Int) {
        self.open = open
        self.inFlight = inFlight
    }

    public static func + (a: HTTPConnectionCount, b: HTTPConnectionCount) -> HTTPConnectionCount {
        HTTPConnectionCount(open: a.open + b.open, inFlight: a.inFlight + b.inFlight)
    }
}
