import Foundation
import PushspoolCore

/// Installation ids handed out before their device registers (`DeviceRegistry.reserve`), in the
/// shared database: an id one host's `serve` handed out is accepted by every host's.
extension PostgresRegistry {
    public func reserve(id: String, owner: String, now: Date) throws(RegistryError) {
        let purge = lastPurge.withLock { last -> Bool in
            guard last.map({ now.timeIntervalSince($0) >= IDReservation.purgeInterval || now < $0 }) ?? true else { return false }
            last = now
            return true
        }
        try run { c in
            if purge {
                try c.query("DELETE FROM id_reservations WHERE reserved_at < $1::float8",
                            ["\(now.timeIntervalSince1970 - IDReservation.lifetime)"])
            }
            try c.query("""
                INSERT INTO id_reservations(id, owner, reserved_at) VALUES($1, $2, $3::float8)
                ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, reserved_at = excluded.reserved_at
                """, [id, owner, "\(now.timeIntervalSince1970)"])
        }
    }

    public func reservation(id: String) throws(RegistryError) -> IDReservation? {
        try run { c in
            let rows = try c.query("SELECT owner, reserved_at FROM id_reservations WHERE id = $1", [id])
            guard rows.count > 0 else { return nil }
            return IDReservation(owner: rows.text(0, 0) ?? "", at: Date(timeIntervalSince1970: rows.double(0, 1)))
        }
    }

    public func releaseReservation(id: String) throws(RegistryError) {
        try run { c in _ = try c.query("DELETE FROM id_reservations WHERE id = $1", [id]) }
    }
}
