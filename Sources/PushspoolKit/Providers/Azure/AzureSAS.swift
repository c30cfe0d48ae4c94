import Foundation

/// Shared Access Signature tokens for Notification Hubs (README: "How answers are handled"), built by pure functions
/// so tests can compare them byte for byte:
///
///     SharedAccessSignature sr=<enc>&sig=<sig>&se=<expiry>&skn=<rule>
///     enc = lowercase(percent-encode(lowercase("https://<host>/<hub>")))
///     sig = percent-encode(base64(HMAC-SHA256(key: UTF-8 of the key as written, enc + "\n" + se)))
///
/// Wire quirks: Microsoft's prose says to sign the unencoded URI, but its sample code and every
/// SDK sign the encoded, lowercased `sr` — the hub recomputes the HMAC over the `sr` it received,
/// so we sign exactly the string we send. The key is used as text, never base64-decoded.
/// The percent-encoding is JavaScript's `encodeURIComponent` (what the Node SDK and the docs'
/// sample use): `:` → `%3a` and `/` → `%2f` in `sr` (lowercased afterwards), `+` `/` `=` →
/// `%2B` `%2F` `%3D` in `sig` (not lowercased: the signature is case-sensitive base64).
public enum AzureSAS {
    public static let scheme = "SharedAccessSignature"

    /// The resource the token grants access to: `https://<host>[:port]/<hub>`.
    public static func resourceURI(authority: String, hub: String) -> String {
        "https://\(authority)/\(hub)"
    }

    /// The `sr` value, also the first line of the signed string.
    public static func encodedResource(_ resourceURI: String) -> String {
        percentEncode(resourceURI.lowercased()).lowercased()
    }

    /// The base64 HMAC-SHA256 signature of `sr + "\n" + se`, before percent-encoding.
    public static func signature(encodedResource: String, expiry: Int, key: String) -> String {
        let mac = HMAC256.mac(key: Array(key.utf8), message: Array("\(encodedResource)\n\(expiry)".utf8))
        return Data(mac).base64EncodedString()
    }

    /// The full `Authorization` header value.
    public static func token(resourceURI: String, keyName: String, key: String, expiry: Int) -> String {
        let sr = encodedResource(resourceURI)
        let sig = percentEncode(signature(encodedResource: sr, expiry: expiry, key: key))
        return "\(scheme) sr=\(sr)&sig=\(sig)&se=\(expiry)&skn=\(keyName)"
    }

    /// `encodeURIComponent`: every UTF-8 byte outside `A-Z a-z 0-9 - _ . ! ~ * ' ( )` becomes `%XX`
    /// (uppercase hex).
    public static func percentEncode(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count * 3 / 2)
        for byte in s.utf8 {
            if unreserved.contains(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%"
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0x0F)]))
            }
        }
        return out
    }

    private static let hex = Array("0123456789ABCDEF".utf8)
    private static let unreserved: Set<UInt8> = Set(
        Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'()".utf8))
}
