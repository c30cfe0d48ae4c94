/// A request target's path as `serve` routes it: the bytes as sent (the library is told not to
/// decode them), split into segments, each segment percent-decoded exactly once and as a whole.
///
/// One canonical spelling per route: `//healthz`, `/healthz/` and `/%68ealthz` are not
/// `/healthz` (a route's fixed segments are compared as sent). A captured segment (an id) is
/// decoded fully: `nultest%00zzz` is the 13-character id with a NUL in it, which the identifier
/// rule refuses, never `nultest`; `a%3F` is `a?`, never `a`.
enum RequestPath {
    /// The segments as sent, or nil when the path is not one a route could have: it does not
    /// start with `/`, or has an empty segment (`//`, a trailing `/`).
    static func segments(_ path: String) -> [Substring]? {
        guard path.hasPrefix("/"), isASCII(path) else { return nil }
        let parts = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        guard !parts.contains(where: \.isEmpty) else { return nil }
        return parts
    }

    /// Whether `path` is visible ASCII only, as a request target must be (anything else is sent
    /// percent-encoded; the library passes a raw space or byte through when it is lenient).
    static func isASCII(_ path: String) -> Bool {
        path.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    /// `segment` percent-decoded, or nil when a `%` is not followed by two hex digits or the
    /// bytes are not UTF-8. A decoded NUL stays in the result (for the identifier rule to refuse).
    static func decoded(_ segment: Substring) -> String? {
        guard segment.utf8.contains(UInt8(ascii: "%")) else { return String(segment) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(segment.utf8.count)
        var it = segment.utf8.makeIterator()
        while let b = it.next() {
            guard b == UInt8(ascii: "%") else { bytes.append(b); continue }
            guard let h = it.next().flatMap(hex), let l = it.next().flatMap(hex) else { return nil }
            bytes.append(h << 4 | l)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// A query string's key or value: percent-decoded where it can be (the library has already
    /// turned `+` into a space), a malformed escape kept as sent, bytes that are not UTF-8 replaced.
    static func decodedLeniently(_ s: String) -> String {
        guard s.utf8.contains(UInt8(ascii: "%")) else { return s }
        var bytes: [UInt8] = []
        let raw = Array(s.utf8)
        var i = 0
        while i < raw.count {
            if raw[i] == UInt8(ascii: "%"), i + 2 < raw.count, let h = hex(raw[i + 1]), let l = hex(raw[i + 2]) {
                bytes.append(h << 4 | l)
                i += 3
            } else {
                bytes.append(raw[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
