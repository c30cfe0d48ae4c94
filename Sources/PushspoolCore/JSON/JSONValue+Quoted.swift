extension JSONValue {
    /// `text` as a JSON string literal fit for a one-line message: quotes and backslashes
    /// escaped, and every character `TerminalText.mustEscape` names as `\n`, `\r`, `\t` or
    /// `\uXXXX`, so a key or value someone typed can neither break the line nor drive a terminal.
    public static func quoted(_ text: String) -> String {
        var out = "\""
        for u in text.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where TerminalText.mustEscape(u):
                let hex = String(u.value, radix: 16, uppercase: true)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }
}
