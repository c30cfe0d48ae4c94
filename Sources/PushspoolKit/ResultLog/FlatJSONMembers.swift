/// The top-level members of a one-line JSON object, found in its bytes without building a tree:
/// what the dashboard's digest and the funnel need of a million delivery lines (a status, a time,
/// a platform) costs a scan instead of a parse (a `JSONValue` tree per line cost more CPU than
/// the dispatcher spent sending them). Values inside nested objects and arrays are skipped.
/// A string holding an escape is reported as such, not decoded: the caller parses that line.
enum FlatJSONMembers {
    enum Value {
        /// A string's bytes, between its quotes, with no escape in them.
        case string(Range<Int>)
        /// A string with an escape (`\"`, `\n`, `\u00e9`…): not decoded here.
        case escapedString
        case null
        /// A number, `true` or `false`: its bytes.
        case scalar(Range<Int>)
        /// An object or an array (skipped).
        case container
    }

    /// Calls `member` with each top-level key (its bytes) and value, in order; false when the
    /// line is not one JSON object as `JSONLineWriter` writes them (then nothing is to be trusted).
    static func scan(_ p: UnsafeBufferPointer<UInt8>, _ member: (_ key: Range<Int>, _ value: Value) -> Void) -> Bool {
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        var i = 0
        let n = p.count
        func space() { while i < n, p[i] == 0x20 || p[i] == 0x09 || p[i] == 0x0D { i += 1 } }
        /// At an opening quote: past the closing one; whether an escape was inside.
        func string() -> (Range<Int>, Bool)? {
            i += 1
            let start = i
            var escaped = false
            while i < n, p[i] != quote {
                if p[i] == backslash { escaped = true; i += 1 }
                i += 1
            }
            guard i < n else { return nil }
            i += 1
            return (start..<i - 1, escaped)
        }
        space()
        guard i < n, p[i] == UInt8(ascii: "{") else { return false }
        i += 1
        space()
        if i < n, p[i] == UInt8(ascii: "}") { return true }
        while i < n {
            space()
            guard i < n, p[i] == quote, let (key, keyEscaped) = string(), !keyEscaped else { return false }
            space()
            guard i < n, p[i] == UInt8(ascii: ":") else { return false }
            i += 1
            space()
            guard i < n else { return false }
            switch p[i] {
            case quote:
                guard let (range, escaped) = string() else { return false }
                member(key, escaped ? .escapedString : .string(range))
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                repeat {
                    switch p[i] {
                    case quote:
                        guard string() != nil else { return false }
                        continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
                    default: break
                    }
                    i += 1
                } while i < n && depth > 0
                guard depth == 0 else { return false }
                member(key, .container)
            default:
                let start = i
                while i < n, p[i] != UInt8(ascii: ","), p[i] != UInt8(ascii: "}"), p[i] != 0x20 { i += 1 }
                guard i > start else { return false }
                let range = start..<i
                if range.count == 4, p[start] == UInt8(ascii: "n") { member(key, .null) } else { member(key, .scalar(range)) }
            }
            space()
            guard i < n else { return false }
            if p[i] == UInt8(ascii: "}") { return true }
            guard p[i] == UInt8(ascii: ",") else { return false }
            i += 1
        }
        return false
    }

    /// Whether the bytes at `range` are `text`'s.
    static func equals(_ p: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ text: StaticString) -> Bool {
        guard range.count == text.utf8CodeUnitCount else { return false }
        let t = text.utf8Start
        for (k, i) in range.enumerated() where p[i] != t[k] { return false }
        return true
    }
}
