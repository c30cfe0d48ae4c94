import Foundation
import PushspoolCore

/// Frequency cap counts (schema 8): `cap_counts`, clustered on (device rowid, job), so a batch's
/// counts are one range read and its reservation one insert of a JSON array of rowids.
extension SQLiteRegistry {
    static let capCountsTable = """
        CREATE TABLE cap_counts(
            device INTEGER NOT NULL,
            job TEXT NOT NULL,
            sent_at REAL NOT NULL,
            PRIMARY KEY(device, job)) WITHOUT ROWID;
        """

    public func reserveCapped(job: String, devices: [CapCandidate], now: Date) throws(RegistryError) -> Set<Int64> {
        guard let low = devices.map(\.key).min(), let high = devices.map(\.key).max() else { return [] }
        return try locked { db in
            try db.transaction {
                let read = try db.statement("SELECT device, job = ?, sent_at FROM cap_counts WHERE device BETWEEN ? AND ?")
                try read.bind([.text(job), .integer(low), .integer(high)])
                var counts: [CapCandidate.Count] = []
                while try read.step() { counts.append(CapCandidate.Count(key: read.int64(0), thisJob: read.int64(1) != 0, at: read.double(2))) }
                read.reset()
                let over = CapCandidate.over(devices, counts: counts, now: now)
                let keys = devices.lazy.filter { !over.contains($0.key) }.map { String($0.key) }
                try db.statement("INSERT OR IGNORE INTO cap_counts(device, job, sent_at) SELECT value, ?, ? FROM json_each(?)")
                    .run([.text(job), .real(now.timeIntervalSince1970), .text("[" + keys.joined(separator: ",") + "]")])
                return over
            }
        }
    }

    @discardableResult
    public func pruneCapCounts(before: Date) throws(RegistryError) -> Int {
        try locked { db in
            try db.statement("DELETE FROM cap_counts WHERE sent_at < ?").run([.real(before.timeIntervalSince1970)])
            return db.changes
        }
    }
}
