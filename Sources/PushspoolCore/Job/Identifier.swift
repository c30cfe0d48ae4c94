import Foundation

/// The identifier rule, one for every door (job files, the command line, `import`, register and
/// unregister jobs, `serve`'s routes) and both kinds of id (README "Identifiers").
///
/// Every id: 1–128 bytes once NFC-normalised, printable, no `/` (ids appear in URL paths), not
/// `.` or `..`, no control, line-separator or bidirectional-control character (they make an id
/// display as another), no invisible character: no format character (general category Cf, such
/// as U+200B ZERO WIDTH SPACE or U+FEFF) and no space but the ASCII one (U+00A0, U+3000…), so that
/// `alice\u{200B}phone` and `alicephone` cannot be two devices that look like one. Device ids keep their case and spaces: ids imported from other systems may
/// hold them. Job ids name files (`results/<id>.jsonl`), so they also stay within
/// `[A-Za-z0-9._-]`, and two job ids that differ only by case are one id (`jobKey`): on a
/// case-insensitive disk (macOS's default) their files would be one file anyway.
public enum Identifier {
    public static let maxBytes = 128
    /// The job id rule as messages quote it.
    public static let jobIDRule = "[A-Za-z0-9._-]{1,128}"

    // MARK: - Device ids

    /// nil when `s` is a valid device id, else why not (one sentence, no field prefix). An id
    /// that is not in NFC is valid and stored normalised (`canonical`).
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
                if TerminalText.isBidiControl(u) { return "contains a bidirectional control character (U+\(hex(u)))" }
                switch u.properties.generalCategory {
                case .control: return "contains a control character"
                case .lineSeparator, .paragraphSeparator: return "contains a line or paragraph separator"
                case .format: return "contains an invisible format character (U+\(hex(u)))"
                case .spaceSeparator: return "contains a space other than U+0020 (U+\(hex(u)))"
                case .unassigned, .surrogate: return "contains an unassigned character (U+\(hex(u)))"
                default: break
                }
            }
        }
        let length = ascii ? s.utf8.count : canonical(s).utf8.count
        if length > maxBytes { return "longer than \(maxBytes) bytes" }
        return nil
    }

    /// The form an id is stored and looked up in: NFC, so one id typed on two systems (é as one
    /// character or as e + accent) is one registry key.
    public static func canonical(_ s: String) -> String {
        s.utf8.allSatisfy { $0 < 0x80 } ? s : s.precomposedStringWithCanonicalMapping
    }

    /// The bytes of a plain-ASCII id that `deviceIDProblem` accepts (the import's fast path:
    /// nothing to normalise, no Unicode properties to consult). False for anything else,
    /// including valid non-ASCII ids, which take the general path.
    @inlinable
    public static func isValidASCIIDeviceID<Bytes: Collection>(_ bytes: Bytes) -> Bool where Bytes.Element == UInt8 {
        let count = bytes.count
        guard count >= 1, count <= maxBytes else { return false }
        var dots = 0
        for b in bytes {
            guard b >= 0x20, b < 0x7F, b != UInt8(ascii: "/") else { return false }
            if b == UInt8(ascii: ".") { dots += 1 }
        }
        return !(dots == count && count <= 2)
    }

    // MARK: - Job ids

    /// Whether `id` is a valid job id: `[A-Za-z0-9._-]{1,128}`, not `.` or `..` (so within the
    /// device id rule too).
    public static func isValidJobID(_ id: String) -> Bool {
        let bytes = id.utf8
        guard (1...maxBytes).contains(bytes.count), id != ".", id != ".." else { return false }
        return bytes.allSatisfy { b in
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"): true
            default: false
            }
        }
    }

    /// nil when `id` is a valid job id, else why not, the id quoted with its control and bidi
    /// characters escaped (one line, no field prefix).
    public static func jobIDProblem(_ id: String) -> String? {
        isValidJobID(id) ? nil : "must match \(jobIDRule), got \"\(TerminalText.escaped(id.count > 80 ? String(id.prefix(77)) + "..." : id, quotes: true))\""
    }

    /// What makes two job ids one: their ASCII letters folded to lower case. The duplicate check
    /// and the claim across hosts compare keys; the result log keeps the id as first given.
    public static func jobKey(_ id: String) -> String {
        guard id.utf8.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else { return id }
        return String(decoding: id.utf8.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    private static func hex(_ u: Unicode.Scalar) -> String {
        let digits = String(u.value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
