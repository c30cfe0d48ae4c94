import Foundation

/// A provider's pause (broken credentials, a revoked key) and quiet time (Retry-After on the
/// whole service) shared by every host on a PostgreSQL registry (schema 8, `provider_pauses`):
/// the host that learns it records it, with its end on the database's clock, and tells the others
/// (`NOTIFY pushspool_queue`), which apply what is left of it to their own `ProviderState`.
public final class SharedProviderPauses: ProviderPauseSharing {
    private let pool: PostgresPool

    /// On the process's one pool.
    init(pool: PostgresPool) { self.pool = pool }

    /// On a pool of one connection of its own (a test's host).
    public convenience init(uri: String) { self.init(pool: PostgresPool(uri: uri, maxConnections: 1)) }

    public func publish(_ pause: ProviderPause) throws {
        try pool.withConnection(waitingAtMost: 2) { c in
            try c.transaction {
                switch pause.kind {
                case .paused(let reason):
                    try c.query("""
                        INSERT INTO provider_pauses(name, paused_until, reason)
                        VALUES($1, clock_timestamp() + make_interval(secs => $2::float8), $3)
                        ON CONFLICT (name) DO UPDATE SET paused_until = greatest(provider_pauses.paused_until, excluded.paused_until),
                            reason = excluded.reason
                        """, [pause.provider, "\(pause.seconds)", reason])
                case .quiet:
                    try c.query("""
                        INSERT INTO provider_pauses(name, quiet_until) VALUES($1, clock_timestamp() + make_interval(secs => $2::float8))
                        ON CONFLICT (name) DO UPDATE SET quiet_until = greatest(provider_pauses.quiet_until, excluded.quiet_until)
                        """, [pause.provider, "\(pause.seconds)"])
                }
                try c.query("SELECT pg_notify($1, $2)", [PostgresJobQueue.channel, "pause " + pause.provider])
            }
        }
    }

    /// The pauses and quiet times still running, each with the seconds left of it.
    public func current() throws -> [ProviderPause] {
        try pool.withConnection(waitingAtMost: 2) { c in
            let r = try c.query("""
                SELECT name, extract(epoch from paused_until - clock_timestamp()), reason, extract(epoch from quiet_until - clock_timestamp())
                FROM provider_pauses WHERE paused_until > clock_timestamp() OR quiet_until > clock_timestamp()
                """)
            var out: [ProviderPause] = []
            for i in 0..<r.count {
                let name = r.text(i, 0) ?? ""
                if !r.isNull(i, 1), r.double(i, 1) > 0 {
                    out.append(ProviderPause(provider: name, kind: .paused(r.text(i, 2) ?? "paused by another host"), seconds: r.double(i, 1)))
                }
                if !r.isNull(i, 3), r.double(i, 3) > 0 {
                    out.append(ProviderPause(provider: name, kind: .quiet, seconds: r.double(i, 3)))
                }
            }
            return out
        }
    }
}
