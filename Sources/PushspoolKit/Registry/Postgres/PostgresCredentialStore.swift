import Foundation

/// Credentials shared through the PostgreSQL registry (`credentials` table), so that dispatchers
/// on several hosts use one APNs provider token per key (and one OAuth token, one SAS) and renew
/// it no more often than the provider allows. A renewal holds a transaction-scoped advisory lock
/// on the key: the other hosts wait for it (bounded by the transaction's `lock_timeout`) and then
/// read the new token.
public final class PostgresCredentialStore: CredentialStore {
    private let pool: PostgresPool

    /// On the process's one pool: a renewal holds one of its connections for its transaction,
    /// and waiting for one is bounded like waiting for a lock.
    init(pool: PostgresPool) { self.pool = pool }

    /// On a small pool of its own (a test's host).
    public convenience init(uri: String) { self.init(pool: PostgresPool(uri: uri, maxConnections: 8)) }

    public func withLocked<T>(_ key: String, waitingAtMost seconds: Double,
                              _ body: (inout CachedCredential?) throws -> T) throws -> T {
        try pool.withConnection(waitingAtMost: seconds) { c in
            try c.transaction {
                // Past this, the lock wait fails (SQLSTATE 55P03) and the transaction rolls back.
                try c.query("SELECT set_config('lock_timeout', $1, true)", ["\(max(1, Int(seconds * 1000)))"])
                do {
                    try c.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", ["pushspool-credential:" + key])
                } catch let e as PostgresError where e.sqlState == "55P03" {
                    throw CredentialLockBusy(key: key, seconds: seconds)
                }
                let rows = try c.query("SELECT token, issued_at, expires_at FROM credentials WHERE key = $1", [key])
                let before = rows.count > 0
                    ? CachedCredential(token: rows.text(0, 0) ?? "", issuedAt: Date(timeIntervalSince1970: rows.double(0, 1)),
                                       expiresAt: Date(timeIntervalSince1970: rows.double(0, 2)))
                    : nil
                var value = before
                let result = try body(&value)
                if value != before {
                    if let v = value {
                        try c.query("""
                            INSERT INTO credentials(key, token, issued_at, expires_at) VALUES($1, $2, $3::float8, $4::float8)
                            ON CONFLICT (key) DO UPDATE SET token = excluded.token, issued_at = excluded.issued_at,
                                expires_at = excluded.expires_at
                            """, [key, v.token, "\(v.issuedAt.timeIntervalSince1970)", "\(v.expiresAt.timeIntervalSince1970)"])
                    } else {
                        try c.query("DELETE FROM credentials WHERE key = $1", [key])
                    }
                }
                return result
            }
        }
    }
}
