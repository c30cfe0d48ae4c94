/// Who made a request: an app user (HTTP Basic against `http.users_file`) or a service (a bearer
/// token from `http.tokens_file`, known by the name it has there).
public enum Principal: Sendable, Equatable, CustomStringConvertible {
    case user(String)
    case service(String)
    /// An operator of the dashboard (`http.operators_file`), logged in through its form.
    case `operator`(String)

    /// For the access log: the user or the token's name, never a credential.
    public var description: String {
        switch self {
        case .user(let name): "user:\(name)"
        case .service(let name): "token:\(name)"
        case .operator(let name): "operator:\(name)"
        }
    }
}

/// What the front door does with a request's credentials.
public enum AuthDecision: Sendable, Equatable {
    case allowed(Principal)
    /// `401` with `WWW-Authenticate`; the reason is safe to show (it never repeats a credential).
    case unauthorized(String)
    /// `429` with `Retry-After` (seconds): the principal is over `http.rate_limit_per_minute`, or
    /// its address failed to log in too often.
    case throttled(retryAfter: Int)
    /// `503` with `Retry-After` (seconds): too many passwords are waiting to be checked.
    case busy(retryAfter: Int)
}

/// The seam between the HTTP server and credential checking.
///
/// - Thread safety: called from the server's threads, concurrently.
/// - Each call counts against the rate limits: a verified principal's request against
///   `http.rate_limit_per_minute`, a failed check against its remote address.
/// - Nothing a caller passes in (a header, a password, a token) is ever logged or kept in clear.
public protocol RequestAuthenticator: Sendable {
    /// An app user: `authorization` is the request's `Authorization` header (`Basic …`) or nil.
    /// `then` runs exactly once, at once or later from another thread (a password is hashed
    /// away from the server's event threads).
    func user(authorization: String?, remote: String, then: @escaping @Sendable (AuthDecision) -> Void)
    /// A service: `authorization` is `Bearer <token>` or nil.
    func service(authorization: String?, remote: String) -> AuthDecision
    /// An operator's name and password from the dashboard's login form; `then` runs once.
    func operatorLogin(user: String, password: [UInt8], remote: String, then: @escaping @Sendable (AuthDecision) -> Void)
}

extension RequestAuthenticator {
    /// Seams without operators refuse every login.
    public func operatorLogin(user: String, password: [UInt8], remote: String, then: @escaping @Sendable (AuthDecision) -> Void) {
        then(.unauthorized("no operators are configured (http.operators_file)"))
    }
}
