/// The one escape for user-supplied text shown on one line: a terminal, a log line, an error
/// message, a problem in a result log. A device id, a tag, a reason or a message someone typed
/// must neither break the line nor drive the terminal (escape sequences) nor make one text display
/// as another (a right-to-left override turns `abc‮gpj.exe` into `abcexe.jpg` on screen).
/// JSON output keeps JSON's own escapes (`JSONValue.writeString`) for the same characters.
public enum TerminalText {
    /// Whether `u` must not reach a terminal as is: control characters (C0, DEL, C1), the line and
    /// paragraph separators (U+2028, U+2029), and the bidirectional controls.
    @inlinable
    public static func mustEscape(_ u: Unicode.Scalar) -> Bool {
        let v = u.value
        if v < 0x20 || (0x7F...0x9F).contains(v) { return true }
        return v >= 0x61C && (v == 0x2028 || v == 0x2029 || isBidiControl(u))
    }

    /// The bidirectional formatting characters: embeddings and overrides (U+202A–202E), isolates
    /// (U+2066–2069), and the marks (U+200E, U+200F, U+061C).
    @inlinable
    public static func isBidiControl(_ u: Unicode.Scalar) -> Bool {
        switch u.value {
        case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: return true
        default: return false
        }
    }

    /// `text` with each character `mustEscape` names written as `\n`, `\r`, `\t` or `\u{202E}`;
    /// `quotes` also escapes `"` and `\` (a quoted logfmt value). The text itself when there is
    /// nothing to escape (the common case costs one scan, no copy).
    public static func escaped(_ text: String, quotes: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: { mustEscape($0) || (quotes && ($0 == "\"" || $0 == "\\")) }) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for u in text.unicodeScalars {
            switch u {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\"" where quotes: out += "\\\""
            case "\\" where quotes: out += "\\\\"
            case _ where mustEscape(u): out += "\\u{\(String(u.value, radix: 16, uppercase: true))}"
            default: out.unicodeScalars.append(u)
            }
        }
        return out
    }
}
