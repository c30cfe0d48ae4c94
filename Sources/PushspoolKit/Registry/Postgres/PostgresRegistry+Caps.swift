import Foundation
import PushspoolCore

/// Frequency cap counts (schema 6), shared by every host. A batch takes a transaction-scoped
/// advisory lock, so two hosts' capped jobs never both let one device through its last slot.
extension PostgresRegistry {
    static let capLockKey = "7081974654"

    public func reserveCapped(job: String, devices: [CapCandidate], now: Date) throws(RegistryError) -> Set<Int64> {
        guard let low = devices.map(\.key).min(), let high = devices.map(\.key).max() else { return [] }
        return try transaction { c in
            try c.query("SELECT pg_advisory_xact_lock($1::bigint)", [Self.capLockKey])
            let rows = try c.query("SELECT device, job = $1, sent_at FROM cap_counts WHERE device BETWEEN $2::bigint AND $3::bigint",
                                   [job, "\(low)", "\(high)"])
            let counts = (0..<rows.count).map { i in
                CapCandidate.Count(key: rows.int64(i, 0), thisJob: rows.text(i, 1) == "t", at: rows.double(i, 2))
            }
            let over = CapCandidate.over(devices, counts: counts, now: now)
            let keys = devices.lazy.filter { !over.contains($0.key) }.map { String($0.key) }
            try c.query("""
                INSERT INTO cap_counts(device, job, sent_at) SELECT unnest($1::bigint[]), $2, $3::float8
                ON CONFLICT DO NOTHING
                """, ["{" + keys.joined(separator: ",") + "}", job, "\(now.timeIntervalSince1970)"])
            return over
        }
    }

    @discardableResult
    public func pruneCapCounts(before: Date) throws(RegistryError) -> Int {
        try run { c in
            Int(try c.query("WITH gone AS (DELETE FROM cap_counts WHERE sent_at < $1::float8 RETURNING 1) SELECT count(*) FROM gone",
                            ["\(before.timeIntervalSince1970)"]).int64(0, 0))
        }
    }
}
