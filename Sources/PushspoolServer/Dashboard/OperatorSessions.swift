import PushspoolKit
import CCrypto
import Foundation
import PushspoolCore
import Synchronization

/// The dashboard's logged-in operators, kept in this process only: a session is a random
/// cookie value (256 bits) that names an operator and a CSRF token of its own.
///
/// - Only the SHA-256 of a cookie value is kept, so a memory dump does not hand out sessions,
///   and a lookup compares digests (a timing difference tells nothing about a live value).
/// - A session unused for `idleSeconds` (12 h) is gone; `end` (logout) removes it at once, so a
///   copied cookie is worthless afterwards.
/// - At most `capacity` sessions; past it the least recently used one goes first.
/// - A restart of `serve` ends every session (operators log in again).
public final class OperatorSessions: Sendable {
    public struct Session: Sendable, Equatable {
        public var user: String
        /// Sent back by the page on every state change (`X-CSRF-Token`), compared in constant time.
        public var csrf: String
        var lastUsed: Double
    }

    /// The cookie's name; its path is `/ui`.
    public static let cookieName = "pushspool_session"
    public static let defaultIdleSeconds: Double = 12 * 3600

    let idleSeconds: Double
    let capacity: Int
    private let now: @Sendable () -> Date
    private let sessions = Mutex<[[UInt8]: Session]>([:])

    public init(idleSeconds: Double = OperatorSessions.defaultIdleSeconds, capacity: Int = 10_000,
                now: @escaping @Sendable () -> Date = Date.init) {
        self.idleSeconds = idleSeconds
        self.capacity = capacity
        self.now = now
    }

    /// A new session for `user`: the cookie value to set, and the session.
    public func begin(user: String) -> (cookie: String, session: Session) {
        let cookie = Self.randomToken()
        let t = now().timeIntervalSince1970
        let session = Session(user: user, csrf: Self.randomToken(), lastUsed: t)
        sessions.withLock { map in
            if map.count >= capacity {
                map = map.filter { t - $0.value.lastUsed < idleSeconds }
                if map.count >= capacity, let oldest = map.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                    map[oldest.key] = nil
                }
            }
            map[SHA256.digest(Array(cookie.utf8))] = session
        }
        return (cookie, session)
    }

    /// The live session named by `cookie` (and its use counted: the idle clock starts again), or nil.
    public func session(cookie: String) -> Session? {
        let key = SHA256.digest(Array(cookie.utf8))
        let t = now().timeIntervalSince1970
        return sessions.withLock { map in
            guard var s = map[key] else { return nil }
            guard t - s.lastUsed < idleSeconds else {
                map[key] = nil
                return nil
            }
            s.lastUsed = t
            map[key] = s
            return s
        }
    }

    /// Logout: the session is gone on the server, whatever the browser keeps.
    public func end(cookie: String) {
        let key = SHA256.digest(Array(cookie.utf8))
        _ = sessions.withLock { $0.removeValue(forKey: key) }
    }

    public var count: Int { sessions.withLock { $0.count } }

    /// Whether `token` is `session`'s CSRF token (constant time).
    public static func csrfMatches(_ token: String?, _ session: Session) -> Bool {
        guard let token else { return false }
        return ConstantTime.equal(Array(token.utf8), Array(session.csrf.utf8))
    }

    /// The session cookie's value from a `Cookie` header (`a=1; pushspool_session=…`).
    public static func cookie(in header: String?) -> String? {
        guard let header else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces)
            guard let eq = pair.firstIndex(of: "=") else { continue }
            if pair[..<eq] == cookieName {
                let value = String(pair[pair.index(after: eq)...])
                return value.isEmpty ? nil : value
            }
        }
        return nil
    }

    /// `Set-Cookie` for a new session: never readable by scripts, never sent from another site,
    /// and under TLS never over plain HTTP. No `Max-Age`: the server decides when it ends.
    public static func setCookie(_ value: String, secure: Bool) -> String {
        "\(cookieName)=\(value); Path=/ui; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// `Set-Cookie` that makes the browser forget the session (after logout).
    public static func clearCookie(secure: Bool) -> String {
        "\(cookieName)=; Path=/ui; Max-Age=0; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// 32 random bytes from OpenSSL's CSPRNG, base64url without padding.
    static func randomToken() -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        if RAND_bytes(&bytes, 32) != 1 {
            var g = SystemRandomNumberGenerator()
            for i in bytes.indices { bytes[i] = g.next() }
        }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
