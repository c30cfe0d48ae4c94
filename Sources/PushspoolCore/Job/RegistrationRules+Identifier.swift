import Foundation

/// The identifier rule for device (installation) ids. Job ids follow it too, with a narrower
/// character set on top (`JobParser.isValidID`): they name files.
extension RegistrationRules {
    /// Ids appear in URL paths (`/v1/devices/{id}`), file-like contexts and result logs.
    public static let maxIDBytes = 128

    /// nil when `s` is a valid device id, else why not (one sentence, no field prefix).
    ///
    /// Valid: 1–128 bytes (NFC-normalised), printable, no `/` (ids appear in URL paths), not `.`
    /// or `..`, no control, line-separator or bidirectional-control character (U+202A–202E,
    /// U+2066–2069, U+200E, U+200F, U+061C: they make an id display as another). Spaces and
    /// case are kept: ids imported from other systems may hold them. An id that is not in NFC is
    /// valid and stored normalised (`canonicalID`).
    public static func deviceIDProblem(_ s: String) -> String? {
        var ascii = true
        for b in s.utf8 {
            if b < 0x20 || b == 0x7F { return "contains a control character" }
            if b == UInt8(ascii: "/") { return "must not contain \"/\" (ids appear in URL paths)" }
            if b >= 0x80 { ascii = false }
        }
        if s.isEmpty { return "must not be empty" }
        if s == "." || s == ".." { return "must not be \".\" or \"..\"" }
        if !ascii {
            for u in s.unicodeScalars {
                if isBidiControl(u) { return "contains a bidirectional control character (U+\(hex(u)))" }
                switch u.properties.generalCategory {
                case .control: return "contains a control character"
                case .lineSeparator, .paragraphSeparator: return "contains a line or paragraph separator"
                case .unassigned, .surrogate: return "contains an unassigned character (U+\(hex(u)))"
                default: break
                }
            }
        }
        let length = ascii ? s.utf8.count : canonicalID(s).utf8.count
        if length > maxIDBytes { return "longer than \(maxIDBytes) bytes" }
        return nil
    }

    /// The form an id is stored and looked up in: NFC, so one id typed on two systems (é as one
    /// character or as e + accent) is one registry key.
    public static func canonicalID(_ s: String) -> String {
        s.utf8.allSatisfy { $0 < 0x80 } ? s : s.precomposedStringWithCanonicalMapping
    }

    /// The bytes of a plain-ASCII id that `deviceIDProblem` accepts (the import's fast path:
    /// nothing to normalise, no Unicode properties to consult). False for anything else,
    /// including valid non-ASCII ids, which take the general path.
    @inlinable
    public static func isValidASCIIDeviceID<Bytes: Collection>(_ bytes: Bytes) -> Bool where Bytes.Element == UInt8 {
        let count = bytes.count
        guard count >= 1, count <= maxIDBytes else { return false }
        var dots = 0
        for b in bytes {
            guard b >= 0x20, b < 0x7F, b != UInt8(ascii: "/") else { return false }
            if b == UInt8(ascii: ".") { dots += 1 }
        }
        return !(dots == count && count <= 2)
    }

    static func isBidiControl(_ u: Unicode.Scalar) -> Bool {
        switch u.value {
        case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: return true
        default: return false
        }
    }

    private static func hex(_ u: Unicode.Scalar) -> String {
        let digits = String(u.value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
