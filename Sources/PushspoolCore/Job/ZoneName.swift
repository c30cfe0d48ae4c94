import Foundation
import Synchronization

/// An IANA time zone name as a registration carries it (`tz`: `Europe/Paris`, `Asia/Kolkata`),
/// checked against the system's zone data (Foundation's `TimeZone(identifier:)` reads the
/// distribution's tzdata). Kept as written: the registry stores the name, never an offset, so a
/// zone whose rules change with a tzdata update is read with the new rules.
///
/// Checking a name opens its zone file, so each distinct name is checked once per process and
/// remembered (an import of a million lines meets a few hundred names).
public enum ZoneName {
    /// Names checked so far, with their zone (nil: unknown). Bounded: past `cacheLimit` names a
    /// name is checked again each time (still right, only slower).
    private static let cache = Mutex<[String: TimeZone?]>([:])
    static let cacheLimit = 4096

    /// The zone `name` names, or nil when the system's zone data has no such zone.
    public static func timeZone(_ name: String) -> TimeZone? {
        if let known = cache.withLock({ $0[name] }) { return known }
        let zone = shapeIsValid(name) ? TimeZone(identifier: name) : nil
        cache.withLock { if $0.count < cacheLimit { $0[name] = zone } }
        return zone
    }

    /// The problem with `name` as a `tz`, or nil when the system knows the zone.
    public static func problem(_ name: String) -> String? {
        timeZone(name) == nil ? "unknown time zone \(JobParser.quoted(name)) (an IANA zone name such as \"Europe/Paris\")" : nil
    }

    /// Zone names are ASCII letters, digits and `/ _ + -`, at most 64 bytes: anything else is not
    /// one (and never reaches the file system as a path).
    static func shapeIsValid(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 64, !name.hasPrefix("/"), !name.contains("..") else { return false }
        return name.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "/") || b == UInt8(ascii: "_") || b == UInt8(ascii: "+") || b == UInt8(ascii: "-")
        }
    }
}
