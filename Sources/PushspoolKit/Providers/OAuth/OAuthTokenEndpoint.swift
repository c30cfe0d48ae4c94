import Foundation
import PushspoolHTTP
import PushspoolCore

/// The OAuth 2 token request both FCM (JWT bearer grant) and WNS (client credentials) make:
/// a form-encoded POST answered with `{"access_token", "expires_in", …}`.
public struct OAuthTokenEndpoint: Sendable {
    /// The token endpoint URL (Google: the service account's `token_uri`; WNS: `token_endpoint`).
    public var url: String
    /// "fcm" or "wns": prefixes reasons so a paused provider says which endpoint refused.
    public var label: String
    /// Used when the response carries no `expires_in` (Google and Microsoft always send one).
    public var defaultLifetime: Double = 3600

    public init(url: String, label: String) {
        self.url = url
        self.label = label
    }

    public func request(form: [(String, String)]) -> HTTPRequest {
        HTTPRequest(method: "POST", url: url,
                    headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")],
                    body: Array(FormEncoding.encode(form).utf8), timeout: 30)
    }

    /// Blocking: call only from the token source's fetch queue.
    public func fetch(form: [(String, String)], using http: any HTTPClient, now: Date) -> Result<CachedCredential, AccessTokenError> {
        switch http.executeAndWait(request(form: form)) {
        case .failure(let e):
            // A TLS verification failure will not heal by itself: it is configuration.
            return .failure(AccessTokenError(e.isPermanent ? .refused : .transient, code: "transport",
                                             reason: "\(label) token endpoint unreachable: \(e.message)"))
        case .success(let response):
            return credential(from: response, issuedAt: now)
        }
    }

    /// Classifies the token endpoint's answer. The body is never copied into a reason wholesale:
    /// only the OAuth `error` / `error_description` fields, which carry no secret.
    public func credential(from response: HTTPResponse, issuedAt now: Date) -> Result<CachedCredential, AccessTokenError> {
        let json = try? JSONParser.parse(response.body)
        let code = String(response.status)
        guard response.status == 200 else {
            var detail = ""
            if let error = json?["error"]?.stringValue { detail += " " + Self.clip(error) }
            if let d = json?["error_description"]?.stringValue { detail += ": " + Self.clip(d) }
            let reason = "\(label) token endpoint answered HTTP \(response.status)\(detail)"
            switch response.status {
            case 408, 429, 500...599: return .failure(AccessTokenError(.transient, code: code, reason: reason))
            default: return .failure(AccessTokenError(.refused, code: code, reason: reason))
            }
        }
        guard let token = json?["access_token"]?.stringValue, !token.isEmpty else {
            return .failure(AccessTokenError(.refused, code: code,
                                             reason: "\(label) token endpoint answered without an access_token"))
        }
        if let type = json?["token_type"]?.stringValue, type.lowercased() != "bearer" {
            return .failure(AccessTokenError(.refused, code: code,
                                             reason: "\(label) token endpoint issued a \(Self.clip(type)) token, not a bearer token"))
        }
        let lifetime = json?["expires_in"].flatMap(Self.seconds) ?? defaultLifetime
        return .success(CachedCredential(token: token, issuedAt: now, expiresAt: now.addingTimeInterval(lifetime)))
    }

    /// `expires_in` is a number in both services' docs; some proxies send it as a string.
    static func seconds(_ v: JSONValue) -> Double? {
        switch v {
        case .int(let i): return i > 0 ? Double(i) : nil
        case .double(let d): return d > 0 ? d : nil
        case .string(let s): return Double(s).flatMap { $0 > 0 ? $0 : nil }
        default: return nil
        }
    }

    static func clip(_ s: String) -> String {
        let short = s.count > 160 ? String(s.prefix(160)) + "…" : s
        return TerminalText.escaped(short)
    }
}

/// `application/x-www-form-urlencoded` bodies: everything but unreserved characters is
/// percent-encoded, so secrets with `&`, `=` or `+` survive.
public enum FormEncoding {
    public static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&")
    }

    public static func escape(_ s: String) -> String {
        let hex = Array("0123456789ABCDEF")
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(Character(Unicode.Scalar(b)))
            default:
                out.append("%")
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0xF)])
            }
        }
        return out
    }
}
