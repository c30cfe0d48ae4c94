extension PayloadRenderer {
    /// WNS by `wns_type` (default toast): the legacy ToastText01 toast (ToastText02 with a title),
    /// as in the "notify users" tutorial; a tile with the same text; a badge showing `badge`; raw
    /// bytes, the JSON `{"title"?, "message", <data>}` the app's background task reads. Or
    /// `payload.wns` as written, its `X-WNS-Type` from `wns_type` or else its root element.
    /// `collapse_id` goes as `X-WNS-Tag`, `ttl_seconds` as `X-WNS-TTL`.
    static func renderWNS(_ message: Message) throws(RenderError) -> WNSNotification {
        let body: [UInt8]
        let type: String
        let field: String
        let kind = message.native.wnsType
        if let raw = message.overrides.wns {
            body = Array(raw.utf8)
            type = kind?.header ?? wnsType(of: raw)
            field = "payload.wns"
        } else {
            field = "message"
            switch kind ?? .toast {
            case .toast:
                body = Array("<toast><visual>\(try wnsBinding(message, template: nil))</visual></toast>".utf8)
            case .tile:
                body = Array("<tile><visual>\(try wnsBinding(message, template: "TileWide"))</visual></tile>".utf8)
            case .badge:
                body = Array("<badge value=\"\(message.badge ?? 0)\"/>".utf8)
            case .raw:
                var pairs: [(String, JSONValue)] = []
                if let title = message.title { pairs.append(("title", .string(title))) }
                if !message.text.isEmpty { pairs.append(("message", .string(message.displayText))) }
                for key in message.data.keys.sorted() { pairs.append((key, .string(message.data[key] ?? ""))) }
                body = JSONValue.object(pairs).encoded()
            }
            type = (kind ?? .toast).header
        }
        guard body.count <= WNSNotification.maxPayloadBytes else {
            throw RenderError(field: field, message: "WNS payload is \(body.count) bytes (limit \(WNSNotification.maxPayloadBytes))")
        }
        return WNSNotification(body: body, type: type, ttlSeconds: message.ttlSeconds, tag: message.collapseID)
    }

    /// The text binding of a toast (ToastText01/02) or of a tile in `template`.
    private static func wnsBinding(_ message: Message, template: String?) throws(RenderError) -> String {
        let text = try xmlEscaped(message.displayText, field: "message")
        if let title = message.title {
            let t = try xmlEscaped(title, field: "title")
            return "<binding template=\"\(template ?? "ToastText02")\"><text id=\"1\">\(t)</text><text id=\"2\">\(text)</text></binding>"
        }
        return "<binding template=\"\(template ?? "ToastText01")\"><text id=\"1\">\(text)</text></binding>"
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
