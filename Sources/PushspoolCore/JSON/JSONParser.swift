/// A strict RFC 8259 parser that keeps object key order and reports the byte offset of a problem.
/// Duplicate keys are an error (a job with `"pns"` twice is ambiguous, not "last one wins").
public enum JSONParser {
    public struct Error: Swift.Error, Sendable, Equatable, CustomStringConvertible {
        public var offset: Int
        public var message: String
        public var description: String { "invalid JSON at byte \(offset): \(message)" }
    }

    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64) throws(Error) -> JSONValue {
        var p = Parser(bytes: bytes, maxDepth: maxDepth)
        p.skipSpace()
        let v: JSONValue
        do {
            v = try p.value(depth: 0)
        } catch {
            throw p.truncation(of: error)
        }
        p.skipSpace()
        guard p.i == bytes.count else { throw Error(offset: p.i, message: "unexpected data after the document") }
        return v
    }

    public static func parse(_ text: String) throws(Error) -> JSONValue { try parse(Array(text.utf8)) }

    /// The top-level object's members named in `keys` (an object of just those, in document
    /// order), the whole document checked exactly as strictly as `parse` checks it — syntax,
    /// UTF-8, escapes, duplicate keys, depth — but no value built for any other member: a peek
    /// at a few fields of a large document. A document that is no object gives `.null`.
    public static func members(_ bytes: [UInt8], named keys: Set<String>, maxDepth: Int = 64) throws(Error) -> JSONValue {
        var p = Parser(bytes: bytes, maxDepth: maxDepth)
        p.wanted = keys
        p.skipSpace()
        let v: JSONValue
        do {
            if p.i < bytes.count, bytes[p.i] == UInt8(ascii: "{") { v = try p.value(depth: 0) } else { try p.skip(depth: 0); v = .null }
        } catch {
            throw p.truncation(of: error)
        }
        p.skipSpace()
        guard p.i == bytes.count else { throw Error(offset: p.i, message: "unexpected data after the document") }
        return v
    }

    private struct Parser {
        let bytes: [UInt8]
        let maxDepth: Int
        var i = 0
        /// The objects and arrays open at `i` (their opening bytes), and whether `i` is inside a
        /// string: what a file that ends too early ends inside.
        var open: [UInt8] = []
        var inString = false
        /// A string's closing quote was the last byte: an error after it (bad UTF-8 inside) is
        /// not a file cut short.
        var closedAtEnd = false
        /// `members(_:named:)`: the top-level members to build; the others are only checked.
        var wanted: Set<String>?
        /// False while a value is checked without being built (`skip`).
        var building = true

        init(bytes: [UInt8], maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        mutating func skipSpace() {
            while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
        }

        func fail(_ m: String) -> Error { Error(offset: i, message: m) }

        /// An error at the very end of a document that has begun says so: a file cut short (a
        /// writer that died, a full disk) reads as `truncated (ends inside an object)`, not as
        /// whatever token the parser expected next.
        func truncation(of error: Error) -> Error {
            guard error.offset >= bytes.count, !closedAtEnd, !open.isEmpty || inString || error.offset > 0 else { return error }
            let inside = inString ? "a string" : open.last == UInt8(ascii: "[") ? "an array" : open.isEmpty ? "a value" : "an object"
            return Error(offset: error.offset, message: "truncated (ends inside \(inside))")
        }

        mutating func value(depth: Int) throws(Error) -> JSONValue {
            guard depth < maxDepth else { throw fail("nested too deeply") }
            guard i < bytes.count else { throw fail("unexpected end of input") }
            switch bytes[i] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            case 0x21...0x7E: throw fail("unexpected character '\(Character(Unicode.Scalar(bytes[i])))'")
            // Not printed as such: a control byte would break the message's line (found by the
            // config fuzz target), and one byte of UTF-8 is not a character.
            default: throw fail("unexpected byte 0x" + (bytes[i] < 0x10 ? "0" : "") + String(bytes[i], radix: 16, uppercase: true))
            }
        }

        /// Checks the value at `i` as `value` does, building nothing of it.
        mutating func skip(depth: Int) throws(Error) {
            let was = building
            building = false
            defer { building = was }
            _ = try value(depth: depth)
        }

        mutating func literal(_ word: String) throws(Error) {
            let w = Array(word.utf8)
            guard i + w.count <= bytes.count, Array(bytes[i..<(i + w.count)]) == w else {
                // `tru` at the end of the file: cut short, not misspelt.
                if bytes.count - i < w.count, w.starts(with: bytes[i...]) { i = bytes.count }
                throw fail("invalid literal")
            }
            i += w.count
        }

        mutating func object(depth: Int) throws(Error) -> JSONValue {
            i += 1
            open.append(UInt8(ascii: "{"))   // popped on success only: a throw keeps where it was
            var pairs: [(String, JSONValue)] = []
            var seen = Set<String>()
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; open.removeLast(); return .object(pairs) }
            while true {
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                let keyStart = i
                let key = try string()
                guard seen.insert(key).inserted else { throw Error(offset: keyStart, message: "duplicate key \(JSONValue.quoted(key))") }
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                i += 1
                skipSpace()
                if depth == 0, let wanted, !wanted.contains(key) {
                    try skip(depth: depth + 1)
                } else {
                    let member = try value(depth: depth + 1)
                    if building { pairs.append((key, member)) }
                }
                skipSpace()
                guard i < bytes.count else { throw fail("unexpected end of input in object") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; open.removeLast(); return .object(pairs) }
                throw fail("expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws(Error) -> JSONValue {
            i += 1
            open.append(UInt8(ascii: "["))
            var items: [JSONValue] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; open.removeLast(); return .array(items) }
            while true {
                skipSpace()
                let item = try value(depth: depth + 1)
                if building { items.append(item) }
                skipSpace()
                guard i < bytes.count else { throw fail("unexpected end of input in array") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; open.removeLast(); return .array(items) }
                throw fail("expected ',' or ']'")
            }
        }

        mutating func hex4() throws(Error) -> UInt32 {
            guard i + 4 <= bytes.count else { throw fail("truncated \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[i]
                let d: UInt32
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
                default: throw fail("bad hex digit in \\u escape")
                }
                v = v * 16 + d
                i += 1
            }
            return v
        }

        mutating func string() throws(Error) -> String {
            i += 1
            inString = true
            var out: [UInt8] = []
            while true {
                guard i < bytes.count else { throw fail("unterminated string") }
                let c = bytes[i]
                if c == UInt8(ascii: "\"") {
                    i += 1
                    inString = false
                    closedAtEnd = i == bytes.count
                    break
                }
                if c < 0x20 { throw fail("control character in string") }
                if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
                i += 1
                guard i < bytes.count else { throw fail("unterminated escape") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                            throw fail("unpaired surrogate")
                        }
                        i += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw fail("unpaired surrogate")
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default: throw fail("invalid escape")
                }
            }
            guard let s = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8 in string") }
            return s
        }

        mutating func number() throws(Error) -> JSONValue {
            let start = i
            if bytes[i] == UInt8(ascii: "-") { i += 1 }
            func digits(_ p: inout Parser) -> Int {
                let s = p.i
                while p.i < p.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(p.bytes[p.i]) { p.i += 1 }
                return p.i - s
            }
            guard i < bytes.count else { throw fail("bad number") }
            if bytes[i] == UInt8(ascii: "0") { i += 1 } else if digits(&self) == 0 { throw fail("bad number") }
            var isInt = true
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                isInt = false
                i += 1
                guard digits(&self) > 0 else { throw fail("bad number") }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                isInt = false
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard digits(&self) > 0 else { throw fail("bad number") }
            }
            let text = String(decoding: bytes[start..<i], as: UTF8.self)
            if isInt, let v = Int64(text) { return .int(v) }
            guard let d = Double(text) else { throw Error(offset: start, message: "bad number") }
            // 1e400 reads as infinity, which JSON cannot write back (found by fuzzing).
            guard d.isFinite else { throw Error(offset: start, message: "number out of range") }
            return .double(d)
        }
    }
}
