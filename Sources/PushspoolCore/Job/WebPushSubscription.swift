/// A browser's PushSubscription, as the page hands it to the server:
/// `{"endpoint":"https://…","keys":{"p256dh":"<base64url>","auth":"<base64url>"}}`.
///
/// It is the `web` platform's device handle. The registry stores it in one canonical form (compact
/// JSON, keys in that order, other members dropped), so the same subscription sent twice, or once
/// as an object and once as JSON text, is the same handle.
public struct WebPushSubscription: Sendable, Equatable {
    /// The push service URL to POST to (https).
    public var endpoint: String
    /// The user agent's P-256 public key, uncompressed (65 bytes, 0x04‖X‖Y).
    public var p256dh: [UInt8]
    /// The 16-byte authentication secret.
    public var auth: [UInt8]

    public static let publicKeyBytes = 65
    public static let authBytes = 16

    public init(endpoint: String, p256dh: [UInt8], auth: [UInt8]) {
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
    }

    /// A problem with a subscription: the field it concerns (`endpoint`, `keys.p256dh`…) and why.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var field: String
        public var message: String
        public var description: String { field.isEmpty ? message : "\(field): \(message)" }
    }

    /// Parses a subscription given as an object or as its JSON text.
    public static func parse(_ value: JSONValue) throws(Problem) -> WebPushSubscription {
        switch value {
        case .string(let text): return try parse(text: text)
        case .object: return try parse(object: value)
        default:
            throw Problem(field: "", message: "a Web Push subscription must be an object or its JSON text, got \(value.typeName)")
        }
    }

    public static func parse(text: String) throws(Problem) -> WebPushSubscription {
        guard text.utf8.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) == UInt8(ascii: "{"),
              let value = try? JSONParser.parse(text) else {
            throw Problem(field: "", message: "a Web Push subscription must be the PushSubscription JSON {\"endpoint\":\"https://…\",\"keys\":{\"p256dh\":…,\"auth\":…}}")
        }
        return try parse(object: value)
    }

    private static func parse(object value: JSONValue) throws(Problem) -> WebPushSubscription {
        guard case .object = value else {
            throw Problem(field: "", message: "a Web Push subscription must be a JSON object, got \(value.typeName)")
        }
        guard let endpointValue = value["endpoint"] else { throw Problem(field: "endpoint", message: "missing") }
        guard case .string(let endpoint) = endpointValue else {
            throw Problem(field: "endpoint", message: "must be a string, got \(endpointValue.typeName)")
        }
        if let problem = endpointProblem(endpoint) { throw Problem(field: "endpoint", message: problem) }
        guard let keys = value["keys"] else { throw Problem(field: "keys", message: "missing (p256dh and auth)") }
        guard case .object = keys else { throw Problem(field: "keys", message: "must be an object, got \(keys.typeName)") }
        let p256dh = try key(keys, "p256dh", bytes: publicKeyBytes, what: "an uncompressed P-256 public key")
        guard p256dh.first == 0x04 else {
            throw Problem(field: "keys.p256dh", message: "must be an uncompressed P-256 public key (65 bytes starting 0x04)")
        }
        let auth = try key(keys, "auth", bytes: authBytes, what: "the authentication secret")
        return WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth)
    }

    private static func key(_ keys: JSONValue, _ name: String, bytes count: Int, what: String) throws(Problem) -> [UInt8] {
        let field = "keys.\(name)"
        guard let v = keys[name] else { throw Problem(field: field, message: "missing") }
        guard case .string(let s) = v else { throw Problem(field: field, message: "must be a base64url string, got \(v.typeName)") }
        guard let decoded = Base64URLDecoding.decode(s) else { throw Problem(field: field, message: "is not base64url") }
        guard decoded.count == count else {
            throw Problem(field: field, message: "must be \(what) of \(count) bytes, got \(decoded.count)")
        }
        return decoded
    }

    /// Why `endpoint` cannot be a push endpoint: an absolute https URL with a plain host, no user
    /// info, no whitespace or control characters. Whether its host may be used is the provider's
    /// `allowed_hosts` decision, made at send time.
    static func endpointProblem(_ endpoint: String) -> String? {
        let bytes = endpoint.utf8
        guard endpoint.hasPrefix("https://") else { return "must be an https URL" }
        let authority = bytes.dropFirst(8).prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return "must be an https URL with a host" }
        guard !bytes.contains(where: { $0 <= 0x20 || $0 >= 0x7F || $0 == UInt8(ascii: "\\") }) else {
            return "contains characters a URL cannot have"
        }
        return nil
    }

    /// `https://host[:port]`: the VAPID audience and what listings show.
    public var origin: String {
        let rest = endpoint.dropFirst("https://".count)
        return "https://" + rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    }

    /// The registry's form of this handle.
    public var canonicalJSON: String {
        JSONValue.object([("endpoint", .string(endpoint)),
                          ("keys", .object([("p256dh", .string(Base64URLDecoding.encode(p256dh))),
                                            ("auth", .string(Base64URLDecoding.encode(auth)))]))]).encodedString
    }
}

/// base64url without padding (RFC 4648 §5), as Web Push keys are written. Padding and the standard
/// alphabet's `+/` are tolerated on input, since some libraries emit them.
public enum Base64URLDecoding {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: [UInt8]) -> String { String(decoding: encodedBytes(bytes), as: UTF8.self) }

    /// `encode` as the text's UTF-8, without making a String (a notification id per device).
    public static func encodedBytes(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(encodedCount(bytes.count))
        bytes.withUnsafeBytes { encode($0, appendingTo: &out) }
        return out
    }

    /// `encode` of `bytes` appended to `out` as UTF-8.
    public static func encode(_ bytes: UnsafeRawBufferPointer, appendingTo out: inout [UInt8]) {
        let count = encodedCount(bytes.count)
        out.append(contentsOf: repeatElement(0, count: count))
        out.withUnsafeMutableBytes { encode(bytes, into: UnsafeMutableRawBufferPointer(rebasing: $0[($0.count - count)...])) }
    }

    /// The length of `n` bytes' encoding.
    public static func encodedCount(_ n: Int) -> Int { (n * 8 + 5) / 6 }

    /// `encode` of `bytes` written to the start of `out` (at least `encodedCount(bytes.count)`
    /// bytes): a notification id per device, into the room it travels in, with no array.
    public static func encode(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count >= encodedCount(bytes.count))
        alphabet.withUnsafeBufferPointer { alphabet in
            var i = 0, o = 0
            while i + 3 <= bytes.count {
                let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                out[o] = alphabet[Int(n >> 18 & 63)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                out[o + 2] = alphabet[Int(n >> 6 & 63)]
                out[o + 3] = alphabet[Int(n & 63)]
                i += 3
                o += 4
            }
            let rest = bytes.count - i
            if rest == 1 {
                let n = UInt32(bytes[i]) << 16
                out[o] = alphabet[Int(n >> 18 & 63)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
            } else if rest == 2 {
                let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
                out[o] = alphabet[Int(n >> 18 & 63)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                out[o + 2] = alphabet[Int(n >> 6 & 63)]
            }
        }
    }

    public static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        var sawPad = false
        for c in text.utf8 {
            if c == UInt8(ascii: "=") { sawPad = true; continue }
            if sawPad { return nil }
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(c - 65)
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(c - 97 + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(c - 48 + 52)
            case UInt8(ascii: "-"), UInt8(ascii: "+"): values.append(62)
            case UInt8(ascii: "_"), UInt8(ascii: "/"): values.append(63)
            default: return nil
            }
        }
        if values.count % 4 == 1 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var i = 0
        while i < values.count {
            let chunk = values[i..<min(i + 4, values.count)]
            var n: UInt32 = 0
            for (k, v) in chunk.enumerated() { n |= UInt32(v) << (18 - 6 * k) }
            out.append(UInt8(n >> 16 & 0xFF))
            if chunk.count > 2 { out.append(UInt8(n >> 8 & 0xFF)) }
            if chunk.count > 3 { out.append(UInt8(n & 0xFF)) }
            i += 4
        }
        return out
    }
}
