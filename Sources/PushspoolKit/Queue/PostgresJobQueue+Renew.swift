import Foundation
import PushspoolCore

// A chunk's life, 4: its holder renews its lease, and reports itself for `status`.
extension PostgresJobQueue {
    /// Renews the leases of the chunks this host is sending (`keys`, `key(job, chunk)`), and
    /// says which it still holds: a lease that ran out is not renewed (`ChunkLease`: a lapsed
    /// holder can do nothing more; another host may have taken the chunk over).
    /// `sent`, `rate`: for `status`.
    public func renew(_ keys: [String], lease: Double, sent: Int64, rate: Double) throws(RegistryError) -> Set<String> {
        let holding = keys.count
        return try transaction { c in
            try Self.report(on: c, host: host, chunks: holding, sent: sent, rate: rate)
            let r = try c.query("""
                UPDATE queue_chunks SET lease_until = clock_timestamp() + make_interval(secs => $2::float8)
                WHERE host = $1 AND NOT done AND lease_until > clock_timestamp() AND job || chr(31) || chunk = ANY($3::text[])
                RETURNING job, chunk
                """, [host, "\(lease)", PostgresRegistry.arrayLiteral(keys)])
            return Set((0..<r.count).map { Self.key(r.text($0, 0) ?? "", Int(r.int64($0, 1))) })
        }
    }

    /// Writes this host's report for `status` (chunks held, outcomes recorded, their rate):
    /// at start, and with each renewal while it holds chunks.
    public func report(chunks: Int, sent: Int64, rate: Double) throws(RegistryError) {
        try run { c in try Self.report(on: c, host: host, chunks: chunks, sent: sent, rate: rate) }
    }

    private static func report(on c: PostgresConnection, host: String, chunks: Int, sent: Int64, rate: Double) throws {
        try c.query("""
            INSERT INTO queue_hosts(host, seen_at, chunks, sent, rate) VALUES($1, clock_timestamp(), $2::int, $3::bigint, $4::float8)
            ON CONFLICT (host) DO UPDATE SET seen_at = excluded.seen_at, chunks = excluded.chunks, sent = excluded.sent, rate = excluded.rate
            """, [host, "\(chunks)", "\(sent)", "\(rate)"])
    }

    /// The first key of the advisory lock a running host holds on its listening connection
    /// (the second: its name's `hashtext`): PostgreSQL lets it go when the connection ends, so
    /// `hosts` tells a live host from a dead one without a heartbeat statement.
    static let presenceKey: Int32 = 0x7073_7071   // "pspq"

    /// Takes `host`'s presence lock on `c` for as long as the connection lives (`pg_try_`: two
    /// names of one hash would share it, and then the second is seen by its reports only).
    static func presenceLock(_ host: String, on c: PostgresConnection) throws {
        try c.query("SELECT pg_try_advisory_lock($1::int, hashtext($2))", ["\(presenceKey)", host])
    }
}
