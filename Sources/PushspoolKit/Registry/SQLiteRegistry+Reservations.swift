import Foundation
import PushspoolCore

/// Installation ids handed out before their device registers (`DeviceRegistry.reserve`), kept in
/// the registry file so every process on the spool sees them.
extension SQLiteRegistry {
    static let reservationsTable = """
        CREATE TABLE id_reservations(
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            reserved_at REAL NOT NULL) WITHOUT ROWID;
        """

    public func reserve(id: String, owner: String, now: Date) throws(RegistryError) {
        let purge = lastPurge.withLock { last -> Bool in
            guard last.map({ now.timeIntervalSince($0) >= IDReservation.purgeInterval || now < $0 }) ?? true else { return false }
            last = now
            return true
        }
        try locked { db in
            try db.transaction {
                if purge {
                    try db.statement("DELETE FROM id_reservations WHERE reserved_at < ?")
                        .run([.real(now.timeIntervalSince1970 - IDReservation.lifetime)])
                }
                try db.statement("INSERT OR REPLACE INTO id_reservations(id, owner, reserved_at) VALUES(?, ?, ?)")
                    .run([.text(id), .text(owner), .real(now.timeIntervalSince1970)])
            }
        }
    }

    public func reservation(id: String) throws(RegistryError) -> IDReservation? {
        try locked { db in
            let stmt = try db.statement("SELECT owner, reserved_at FROM id_reservations WHERE id = ?")
            try stmt.bind([.text(id)])
            defer { stmt.reset() }
            return try stmt.step() ? IDReservation(owner: stmt.text(0), at: Date(timeIntervalSince1970: stmt.double(1))) : nil
        }
    }

    public func releaseReservation(id: String) throws(RegistryError) {
        try locked { db in try Self.consumeReservation(id, in: db) }
    }

    /// A registration under a reserved id uses the reservation up.
    static func consumeReservation(_ id: String, in db: SQLiteDatabase) throws {
        try db.statement("DELETE FROM id_reservations WHERE id = ?").run([.text(id)])
    }
}
