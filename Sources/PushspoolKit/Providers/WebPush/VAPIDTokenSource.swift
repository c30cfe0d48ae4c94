import CCrypto
import Foundation
import PushspoolCore

/// RFC 8292 VAPID: the `Authorization: vapid t=<JWT>, k=<public key>` header for one push service.
///
/// The JWT is ES256 over `{"aud": <endpoint origin>, "exp": …, "sub": <subject>}`, signed with the
/// configured key. Push services refuse an `exp` more than 24 hours ahead, so tokens live 12 hours
/// and are re-signed in their last hour. One token per origin (every browser's push service is one
/// origin, so a campaign signs a handful), shared by every worker and, through the credential
/// cache's files, every process on the spool.
final class VAPIDTokenSource: Sendable {
    static let lifetime: Double = 12 * 60 * 60
    static let policy = RenewalPolicy(expirySkew: 60 * 60)

    private let key: SigningKey
    private let subject: String
    private let cache: CredentialCache
    /// base64url of the uncompressed public key: the `k=` parameter.
    let publicKey: String
    private let keyPrefix: String

    init(key: SigningKey, subject: String, cache: CredentialCache) {
        self.key = key
        self.subject = subject
        self.cache = cache
        let point = key.uncompressedPublicKey
        publicKey = Base64URL.encode(point)
        // The cache key names the key (a new VAPID key must not reuse the old key's tokens).
        keyPrefix = "webpush-" + Self.fingerprint(point)
    }

    /// The `Authorization` value for requests to `origin` (`https://host[:port]`).
    func authorization(origin: String) throws -> String {
        authorization(token: try token(origin: origin))
    }

    /// The header value for a token already in hand (the provider keeps it to invalidate it).
    func authorization(token: String) -> String { "vapid t=\(token), k=\(publicKey)" }

    func token(origin: String) throws -> String {
        try cache.credential(for: cacheKey(origin), policy: Self.policy) {
            let now = cache.now
            let exp = Int64(now.timeIntervalSince1970 + Self.lifetime)
            let jwt = try Self.sign(audience: origin, subject: subject, exp: exp, key: key)
            return CachedCredential(token: jwt, issuedAt: now, expiresAt: Date(timeIntervalSince1970: Double(exp)))
        }.token
    }

    /// A push service refused our token (401/403): drop it, so a corrected key or clock gets a new one.
    func invalidate(origin: String, token: String) {
        cache.invalidate(key: cacheKey(origin), token: token, policy: Self.policy)
    }

    private func cacheKey(_ origin: String) -> String {
        keyPrefix + "-" + origin.dropFirst("https://".count)
    }

    /// `{"typ":"JWT","alg":"ES256"}.{"aud":…,"exp":…,"sub":…}`, ES256 with a raw r‖s signature.
    static func sign(audience: String, subject: String, exp: Int64, key: SigningKey) throws -> String {
        try JWT.sign(header: [("typ", .string("JWT")), ("alg", .string("ES256"))],
                     claims: [("aud", .string(audience)), ("exp", .int(exp)), ("sub", .string(subject))], key: key)
    }

    /// First 8 bytes of SHA-256 of the public key, hex.
    static func fingerprint(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var n: UInt32 = 0
        _ = EVP_Digest(bytes, bytes.count, &digest, &n, EVP_sha256(), nil)
        return digest.prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}
