extension PayloadRenderer {
    /// WNS: the legacy ToastText01 toast (ToastText02 with a title), as in the "notify users"
    /// tutorial, or `payload.wns` as written with `X-WNS-Type` taken from its root element.
    static func renderWNS(_ message: Message) throws(RenderError) -> WNSNotification {
        let body: [UInt8]
        let type: String
        let field: String
        if let raw = message.overrides.wns {
            body = Array(raw.utf8)
            type = wnsType(of: raw)
            field = "payload.wns"
        } else {
            let text: String
            if let title = message.title {
                text = "<binding template=\"ToastText02\"><text id=\"1\">\(try xmlEscaped(title, field: "title"))</text>"
                    + "<text id=\"2\">\(try xmlEscaped(message.displayText, field: "message"))</text></binding>"
            } else {
                text = "<binding template=\"ToastText01\"><text id=\"1\">\(try xmlEscaped(message.displayText, field: "message"))</text></binding>"
            }
            body = Array("<toast><visual>\(text)</visual></toast>".utf8)
            type = "wns/toast"
            field = "message"
        }
        guard body.count <= WNSNotification.maxPayloadBytes else {
            throw RenderError(field: field, message: "WNS payload is \(body.count) bytes (limit \(WNSNotification.maxPayloadBytes))")
        }
        return WNSNotification(body: body, type: type, ttlSeconds: message.ttlSeconds)
    }

    /// `X-WNS-Type` from the root element, skipping leading space, an XML declaration and comments.
    /// Anything that is not a toast, tile or badge document goes as raw bytes.
    static func wnsType(of raw: String) -> String {
        var rest = Substring(raw)
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\u{FEFF}" }
            if rest.hasPrefix("<?"), let end = rest.range(of: "?>") {
                rest = rest[end.upperBound...]
            } else if rest.hasPrefix("<!--"), let end = rest.range(of: "-->") {
                rest = rest[end.upperBound...]
            } else {
                break
            }
        }
        for root in ["toast", "tile", "badge"] where rest.hasPrefix("<\(root)") {
            let after = rest.dropFirst(root.count + 1).first
            if after == nil || after == ">" || after == "/" || after == " " || after == "\t" || after == "\n" || after == "\r" {
                return "wns/\(root)"
            }
        }
        return "wns/raw"
    }

    /// Text content escaped for XML. Control characters other than tab and newlines cannot appear
    /// in XML 1.0 at all, escaped or not: refuse them rather than send a toast WNS would drop.
    static func xmlEscaped(_ s: String, field: String) throws(RenderError) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    throw RenderError(field: field, message: "contains U+\(String(repeating: "0", count: max(0, 4 - hex.count)))\(hex), which XML cannot carry")
                }
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
