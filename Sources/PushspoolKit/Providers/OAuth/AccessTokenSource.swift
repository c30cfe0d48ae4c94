import Dispatch
import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization

/// Why no access token could be had. Reasons never contain the secret, the assertion or a token.
public struct AccessTokenError: Error, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Transport trouble, or a 429/5xx from the token endpoint: the send is retried later.
        case transient
        /// The token endpoint refused the credentials (400/401/403…) or they cannot be used at all:
        /// the provider is paused, nothing is deleted.
        case refused
    }

    public var kind: Kind
    /// HTTP status of the token endpoint as a string, or a local code ("transport").
    public var code: String
    public var reason: String

    public init(_ kind: Kind, code: String, reason: String) {
        self.kind = kind
        self.code = code
        self.reason = reason
    }

    /// What a send that needed this token reports to the engine.
    public var result: ProviderResult {
        ProviderResult(kind == .transient ? .retry(after: nil) : .credentialsBroken, code: code, reason: reason)
    }
}

/// One OAuth access token (FCM or WNS), shared by every worker of the process and, through the
/// `CredentialCache`, by every process on the spool.
///
/// Why not just call `CredentialCache.credential` from `send`: a fetch is a blocking HTTP round trip,
/// and `send` may run on the HTTP client's own completion thread (the engine retries from there).
/// Blocking that thread on a fetch that needs that same thread would deadlock, and 256 concurrent
/// sends would park 256 threads. So fetches (and invalidations, which take the key's store lock)
/// run on one serial queue, and every caller that finds no fresh token waits as a callback on the
/// single fetch in flight: one fetch per validity window however many sends ask.
public final class AccessTokenSource: Sendable {
    public typealias Fetch = @Sendable () -> Result<CachedCredential, AccessTokenError>
    public typealias Completion = @Sendable (Result<String, AccessTokenError>) -> Void

    private struct State {
        var current: CachedCredential?
        var waiters: [Completion] = []
        var fetching = false
    }

    private let key: String
    private let cache: CredentialCache
    private let policy: RenewalPolicy
    private let fetch: Fetch
    private let queue: DispatchQueue
    private let state = Mutex(State())

    /// `key` names the credential in the cache (`fcm-<client_email>`, `wns-<client_id>`).
    public init(key: String, cache: CredentialCache, policy: RenewalPolicy = RenewalPolicy(expirySkew: 300),
                fetch: @escaping Fetch) {
        self.key = key
        self.cache = cache
        self.policy = policy
        self.fetch = fetch
        self.queue = DispatchQueue(label: "pushspool.oauth.\(key)")
    }

    /// Calls `completion` with a fresh token: at once when one is held, else after the (shared) fetch.
    public func token(_ completion: @escaping Completion) {
        enum Next { case ready(String), wait, startFetch }
        let now = cache.now
        let next: Next = state.withLock { s in
            if let c = s.current, policy.isFresh(c, now: now) { return .ready(c.token) }
            s.waiters.append(completion)
            if s.fetching { return .wait }
            s.fetching = true
            return .startFetch
        }
        switch next {
        case .ready(let token): completion(.success(token))
        case .wait: break
        case .startFetch: queue.async { self.runFetch() }
        }
    }

    /// Reports that `token` was refused as expired (HTTP 401). The next `token` call fetches anew
    /// unless another process already holds a newer one.
    public func invalidate(_ token: String) {
        state.withLock { s in
            if s.current?.token == token { s.current = nil }
        }
        // On the fetch queue: it takes the key's store lock, which a fetch may hold.
        queue.async { [cache, key, policy] in
            cache.invalidate(key: key, token: token, policy: policy)
        }
    }

    private func runFetch() {
        let result: Result<CachedCredential, AccessTokenError>
        do {
            result = .success(try cache.credential(for: key, policy: policy) { try fetch().get() })
        } catch let e as AccessTokenError {
            result = .failure(e)
        } catch {
            result = .failure(AccessTokenError(.transient, code: "io", reason: "credential cache: \(error)"))
        }
        let waiters = state.withLock { s in
            if case .success(let c) = result { s.current = c }
            s.fetching = false
            defer { s.waiters = [] }
            return s.waiters
        }
        let tokenResult = result.map(\.token)
        for w in waiters { w(tokenResult) }
    }
}

extension AccessTokenSource {
    /// Sends `request(bearer)` with a current access token. An answer classified as
    /// `.refreshCredentials` drops that token, so the engine's immediate retry fetches a new one;
    /// a token that cannot be had is answered with the fetch's own result.
    func execute(_ request: @escaping @Sendable (String) -> HTTPRequest, on http: any HTTPClient,
                 classify: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> ProviderResult,
                 completion: @escaping @Sendable (ProviderResult) -> Void) {
        token { [self] result in
            switch result {
            case .failure(let e):
                completion(e.result)
            case .success(let bearer):
                http.execute(request(bearer)) { outcome in
                    let r = classify(outcome)
                    if r.disposition == .refreshCredentials { self.invalidate(bearer) }
                    completion(r)
                }
            }
        }
    }
}
