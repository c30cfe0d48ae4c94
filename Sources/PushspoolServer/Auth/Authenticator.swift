import PushspoolKit
import Foundation
import PushspoolCore
import Synchronization

/// The front door's credential checks (`RequestAuthenticator`): app users by HTTP Basic against
/// `http.users_file`, services by bearer token against `http.tokens_file`.
///
/// Per request, in this order: an address that failed too often is turned away (before any
/// password is checked, so guessing stays capped even with a right password); the header is
/// parsed; the credential is checked (a password through the verified-credential cache, then
/// `crypt_r`); a failure counts against the address; a success counts against the principal's
/// `http.rate_limit_per_minute`. Both files are re-read when they change.
///
/// Passwords are hashed on a `VerificationPool` of their own, never on the caller's thread
/// (`user(authorization:remote:then:)`); when it is full the answer is `.busy`.
///
/// `remote` is the client's address, best without its port (a port is dropped if present).
/// Reasons in `.unauthorized` never repeat a credential, and unknown user and wrong password
/// read the same, so they do not tell which user names exist.
public final class Authenticator: RequestAuthenticator {
    /// Every problem found while setting up, one line each, naming the key and file.
    public struct SetupError: Error, CustomStringConvertible, Sendable {
        public var problems: [String]
        public var description: String { problems.joined(separator: "\n") }
    }

    static let wrongCredentials = "unknown user or wrong password"
    static let wrongToken = "unknown bearer token"

    private let users: WatchedCredentialFile<HtpasswdFile>?
    private let tokens: WatchedCredentialFile<BearerTokens>?
    /// `http.operators_file`: the dashboard's accounts, checked only by its login form.
    private let operators: WatchedCredentialFile<HtpasswdFile>?
    private let verifier: any PasswordVerifier
    private let pool: VerificationPool
    private let cache: VerifiedCredentialCache
    private let failures: LoginFailureThrottle
    private let rates: PrincipalRateLimiter
    private let now: @Sendable () -> Date
    /// Credentials being checked, with every request waiting for that check.
    private let checking = Mutex<[VerifiedCredentialCache.Key: [(remote: String, then: @Sendable (AuthDecision) -> Void)]]>([:])

    /// Reads `http.users_file` and `http.tokens_file` (either may be absent: then every user,
    /// or every service, is refused). Throws `SetupError` listing every problem when a file
    /// cannot be read, is readable by others, or has a refused line.
    public convenience init(config: HTTPConfig, resolve: (String) -> URL, log: Log,
                            now: @escaping @Sendable () -> Date = Date.init) throws {
        try self.init(config: config, resolve: resolve, now: now, verifier: CryptPasswordVerifier(), log: log)
    }

    /// The seams tests use: a counting verifier, a collecting log.
    init(config: HTTPConfig, resolve: (String) -> URL, now: @escaping @Sendable () -> Date,
         verifier: any PasswordVerifier, log: Log, pool: VerificationPool = VerificationPool()) throws(SetupError) {
        let start = now().timeIntervalSince1970
        var problems: [String] = []
        func watch<C: Sendable>(_ path: String?, _ key: String,
                                _ parse: @escaping @Sendable ([UInt8]) -> (C, problems: [String])) -> WatchedCredentialFile<C>? {
            guard let path else { return nil }
            do {
                let file = try WatchedCredentialFile(url: resolve(path), key: key, now: start, log: log, parse: parse)
                problems += file.initialProblems
                return file
            } catch {
                problems.append(error.description)
                return nil
            }
        }
        users = watch(config.usersFile, "http.users_file") { bytes in
            let file = HtpasswdFile(parsing: bytes)
            return (file, file.problems)
        }
        tokens = watch(config.tokensFile, "http.tokens_file") { bytes in
            let file = BearerTokens(parsing: bytes)
            return (file, file.problems)
        }
        operators = watch(config.operatorsFile, "http.operators_file") { bytes in
            let file = HtpasswdFile(parsing: bytes)
            return (file, file.problems)
        }
        guard problems.isEmpty else { throw SetupError(problems: problems) }
        self.verifier = verifier
        self.pool = pool
        self.cache = VerifiedCredentialCache()
        self.failures = LoginFailureThrottle()
        self.rates = PrincipalRateLimiter(perMinute: config.rateLimitPerMinute)
        self.now = now
    }

    /// What a user check needs: a decision now, or a password hashed first.
    private enum UserCheck {
        case decided(AuthDecision)
        /// The name the check is for (the pool's fairness key), the credential it checks (the
        /// same user and password: one check for every request carrying them at once), and the
        /// check itself: true when the password is right (it is then cached).
        case verify(String, Principal, VerifiedCredentialCache.Key, @Sendable () -> Bool)
    }

    /// The check on the verification pool; `then` runs once, on the caller's thread when no
    /// password needs hashing (a refusal, a recently verified password), else on the pool's.
    ///
    /// Requests carrying the same credential while it is being checked wait for that one check
    /// (an app's burst of requests at start-up costs one bcrypt, not one each, and is not
    /// refused by the pool's one-check-per-user rule); each is then admitted, or counted as a
    /// failure of its own address, as if it had been checked alone.
    public func user(authorization: String?, remote: String, then: @escaping @Sendable (AuthDecision) -> Void) {
        check(userCheck(authorization: authorization, remote: remote), remote: remote, then: then)
    }

    /// An operator's login (the dashboard's form): the name and password checked against
    /// `http.operators_file` exactly as an app user's against `http.users_file`: the same
    /// address throttle, cache and verification pool. Allowed as `.operator(name)`.
    public func operatorLogin(user: String, password: [UInt8], remote: String, then: @escaping @Sendable (AuthDecision) -> Void) {
        let t = now().timeIntervalSince1970
        if let wait = failures.retryAfter(remote, now: t) { return then(.throttled(retryAfter: wait)) }
        guard let table = operators?.current(now: t) else { return then(.unauthorized("no operators are configured (http.operators_file)")) }
        check(passwordCheck(user: user, password: password, table: table, principal: .operator(user), t: t), remote: remote, then: then)
    }

    private func check(_ check: UserCheck, remote: String, then: @escaping @Sendable (AuthDecision) -> Void) {
        switch check {
        case .decided(let d): then(d)
        case .verify(let user, let principal, let key, let check):
            let first = checking.withLock { waiting -> Bool in
                if waiting[key] != nil {
                    waiting[key]!.append((remote, then))
                    return false
                }
                waiting[key] = [(remote, then)]
                return true
            }
            guard first else { return }
            let finish: @Sendable (Bool?) -> Void = { [self] right in
                let waiters = checking.withLock { $0.removeValue(forKey: key) ?? [] }
                for (remote, then) in waiters { then(right.map { decide($0, principal, remote: remote) } ?? .busy(retryAfter: 1)) }
            }
            if !pool.submit(key: user, check, then: { finish($0) }) { finish(nil) }
        }
    }

    /// A checked password's answer for one request.
    private func decide(_ right: Bool, _ principal: Principal, remote: String) -> AuthDecision {
        let t = now().timeIntervalSince1970
        return right ? admit(principal, t) : fail(remote, t, Self.wrongCredentials)
    }

    /// The same check, hashing on the caller's thread (tests, tools without a server).
    public func user(authorization: String?, remote: String) -> AuthDecision {
        switch userCheck(authorization: authorization, remote: remote) {
        case .decided(let d): d
        case .verify(_, let principal, _, let check): decide(check(), principal, remote: remote)
        }
    }

    private func userCheck(authorization: String?, remote: String) -> UserCheck {
        let t = now().timeIntervalSince1970
        if let wait = failures.retryAfter(remote, now: t) { return .decided(.throttled(retryAfter: wait)) }
        let user: String, password: [UInt8]
        switch AuthorizationHeader.basic(authorization) {
        case .missing: return .decided(.unauthorized("credentials required (HTTP Basic)"))
        case .malformed(let why): return .decided(fail(remote, t, why))
        case .ok(let credentials): (user, password) = credentials
        }
        // Not a guess, so not counted against the address: the operator configured no users.
        guard let table = users?.current(now: t) else { return .decided(.unauthorized("no users are configured (http.users_file)")) }
        return passwordCheck(user: user, password: password, table: table, principal: .user(user), t: t)
    }

    /// `user`'s password against `table` (app users' or operators'); `principal` once right.
    private func passwordCheck(user: String, password: [UInt8], table: HtpasswdFile, principal: Principal, t: Double) -> UserCheck {
        // Keyed by the principal (`user:alice`, `operator:alice`): an app user and an operator of
        // the same name and password are two credentials, checked and cached apart.
        let key = cache.key(user: principal.description, password: password)
        guard let hash = table.hashes[user] else {
            // Costs what a wrong password costs (another user's hash has that user's cost), so
            // response times do not tell which user names exist.
            let decoy = table.hashes.first?.value ?? Self.decoyHash
            return .verify(user, principal, key) { [self] in
                _ = verifier.verify(password: password, against: decoy)
                return false
            }
        }
        if cache.contains(key, hash: hash, now: t) { return .decided(admit(principal, t)) }
        return .verify(user, principal, key) { [self] in
            guard verifier.verify(password: password, against: hash) else { return false }
            cache.insert(key, hash: hash, now: t)
            return true
        }
    }

    public func service(authorization: String?, remote: String) -> AuthDecision {
        let t = now().timeIntervalSince1970
        if let wait = failures.retryAfter(remote, now: t) { return .throttled(retryAfter: wait) }
        let token: [UInt8]
        switch AuthorizationHeader.bearer(authorization) {
        case .missing: return .unauthorized("credentials required (Authorization: Bearer)")
        case .malformed(let why): return fail(remote, t, why)
        case .ok(let value): token = value
        }
        guard let table = tokens?.current(now: t) else { return .unauthorized("no tokens are configured (http.tokens_file)") }
        guard let name = table.name(of: token) else { return fail(remote, t, Self.wrongToken) }
        return admit(.service(name), t)
    }

    private func fail(_ remote: String, _ t: Double, _ reason: String) -> AuthDecision {
        failures.recordFailure(remote, now: t)
        return .unauthorized(reason)
    }

    private func admit(_ principal: Principal, _ t: Double) -> AuthDecision {
        if let wait = rates.admit(principal, now: t) { return .throttled(retryAfter: wait) }
        return .allowed(principal)
    }

    /// A bcrypt hash (cost 5, htpasswd -B's default) of a random password nobody knows.
    static let decoyHash = "$2y$05$RcVydoEeSsClV/XRNMH0H.KTgUx5tjNV7q1xu2wqBeVHsKYrIyu9S"
}
