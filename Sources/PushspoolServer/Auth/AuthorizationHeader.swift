import PushspoolKit
import Foundation

/// The credentials of an `Authorization` header (RFC 7617 Basic, RFC 6750 Bearer). Failures
/// carry a reason that is safe to send back and log: it never repeats any part of the header.
enum AuthorizationHeader {
    enum Parsed<Value> {
        case missing
        case malformed(String)
        case ok(Value)
    }

    /// Longer headers are refused before any decoding: no real user name and password need it.
    static let maxLength = 4096

    /// `Basic base64(user:password)` → the user and the password's bytes.
    static func basic(_ header: String?) -> Parsed<(user: String, password: [UInt8])> {
        guard let header, !header.isEmpty else { return .missing }
        guard let encoded = credentials(header, scheme: "basic") else {
            return .malformed("the Authorization header must be Basic credentials")
        }
        guard let data = Data(base64Encoded: String(encoded)) else {
            return .malformed("the Basic credentials are not base64")
        }
        let bytes = [UInt8](data)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else {
            return .malformed("the Basic credentials have no ':' between user and password")
        }
        // User names are tag characters (ASCII); a password may be any bytes but NUL, which
        // crypt cannot take.
        guard let user = String(validating: bytes[..<colon], as: UTF8.self), !user.isEmpty else {
            return .malformed("the Basic credentials have no user name")
        }
        let password = Array(bytes[(colon + 1)...])
        guard !password.contains(0) else { return .malformed("the password contains a NUL byte") }
        return .ok((user, password))
    }

    /// `Bearer <token>` → the token's bytes.
    static func bearer(_ header: String?) -> Parsed<[UInt8]> {
        guard let header, !header.isEmpty else { return .missing }
        guard let token = credentials(header, scheme: "bearer") else {
            return .malformed("the Authorization header must be a Bearer token")
        }
        return .ok(Array(token.utf8))
    }

    /// Whether the header names the Bearer scheme (any case), whatever follows: such a request is a
    /// service's on a route open to users and services alike.
    static func isBearer(_ header: String?) -> Bool {
        guard let header else { return false }
        let scheme = header.trimmingCharacters(in: .whitespaces).prefix { $0 != " " && $0 != "\t" }
        return scheme.lowercased() == "bearer"
    }

    /// What follows `scheme` (any case) and the spaces after it; nil for another scheme, nothing
    /// after it, a header over `maxLength`, or spaces inside the credentials.
    private static func credentials(_ header: String, scheme: String) -> Substring? {
        guard header.utf8.count <= maxLength else { return nil }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard let space = trimmed.firstIndex(where: { $0 == " " || $0 == "\t" }),
              trimmed[..<space].lowercased() == scheme else { return nil }
        let rest = trimmed[space...].drop(while: { $0 == " " || $0 == "\t" })
        guard !rest.isEmpty, !rest.contains(where: { $0 == " " || $0 == "\t" }) else { return nil }
        return rest
    }
}
