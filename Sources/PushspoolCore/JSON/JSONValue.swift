/// A JSON document with object keys kept in order, so that rendered payloads and result-log lines
/// are byte-for-byte predictable (Foundation's JSONSerialization reorders keys and escapes `/`).
public indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// Integers stay exact (badges, timestamps, counts).
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    /// Ordered key/value pairs. Keys are unique when produced by `JSONParser`.
    case object([(String, JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// The value for `key` in an object (first match), else `nil`.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let pairs) = self else { return nil }
        return pairs.first { $0.0 == key }?.1
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The JSON type name used in validation messages ("string", "object", …).
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// Compact UTF-8 encoding (no spaces, `/` not escaped, non-ASCII kept as UTF-8).
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(into: &out)
        return out
    }

    public var encodedString: String { String(decoding: encoded(), as: UTF8.self) }

    public func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d):
            if d.isFinite, d == d.rounded(), abs(d) < 1e15 {
                out.append(contentsOf: String(Int64(d)).utf8)
            } else if d.isFinite {
                out.append(contentsOf: String(d).utf8)
            } else {
                out.append(contentsOf: "null".utf8)
            }
        case .string(let s): JSONValue.writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let pairs):
            out.append(UInt8(ascii: "{"))
            for (i, (k, v)) in pairs.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(k, into: &out)
                out.append(UInt8(ascii: ":"))
                v.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        // One pass over the UTF-8 bytes: runs that need no escape are copied in one go (a
        // delivery line's strings are nearly always such a run; a WNS payload's XML has quotes
        // every few bytes), no per-scalar decoding, nothing allocated.
        s.withUTF8 { u in
            var run = 0, i = 0
            func escape(_ scalar: UInt32, width: Int) {
                if run < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: u[run..<i])) }
                out.append(0x5C)
                switch scalar {
                case 0x22, 0x5C: out.append(UInt8(scalar))
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                case 0x08: out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(UInt8(ascii: "f"))
                default:
                    // Besides what JSON requires, DEL, C1 controls, U+2028/2029 and the bidi
                    // controls are written as \uXXXX (`TerminalText.mustEscape`): a device id or a
                    // reason printed by `devices` or `status --json` must not drive the terminal
                    // it is shown on. All of them are below U+10000.
                    out.append(UInt8(ascii: "u"))
                    out.append(hexDigit(UInt8(scalar >> 12)))
                    out.append(hexDigit(UInt8((scalar >> 8) & 0xF)))
                    out.append(hexDigit(UInt8((scalar >> 4) & 0xF)))
                    out.append(hexDigit(UInt8(scalar & 0xF)))
                }
                i += width
                run = i
            }
            while i < u.count {
                let b = u[i]
                if b >= 0x20 && b < 0x7F {
                    if b == 0x22 || b == 0x5C { escape(UInt32(b), width: 1) } else { i += 1 }
                } else if b < 0x80 {
                    escape(UInt32(b), width: 1)   // a control character or DEL
                } else {
                    // A multi-byte scalar (the string is valid UTF-8): decoded only to ask
                    // whether the terminal must not see it, copied as it is otherwise.
                    let width = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2
                    var scalar = UInt32(b) & (width == 2 ? 0x1F : width == 3 ? 0x0F : 0x07)
                    for k in 1..<width { scalar = scalar << 6 | UInt32(u[i + k] & 0x3F) }
                    if TerminalText.mustEscape(Unicode.Scalar(scalar)!) { escape(scalar, width: width) } else { i += width }
                }
            }
            if run < u.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: u[run...])) }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x57 + v }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
