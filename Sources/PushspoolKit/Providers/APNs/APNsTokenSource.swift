import Foundation
import PushspoolCore

/// The provider JWT for one `.p8` key: one token shared by every connection, worker and (through
/// the credential cache's files) every pushspool process on the spool.
///
/// Apple refuses a token whose `iat` is over an hour old (`ExpiredProviderToken`) and answers
/// `TooManyProviderTokenUpdates` when a key's token changes more often than every 20 minutes, so
/// the token is re-signed after 50 minutes and never sooner than 20 minutes after the last one.
final class APNsTokenSource: Sendable {
    static let policy = RenewalPolicy(renewAfter: 50 * 60, expirySkew: 0, minInterval: 20 * 60)
    /// How long Apple honours a token after its `iat`.
    static let lifetime: Double = 60 * 60

    let teamID: String
    let keyID: String
    private let key: SigningKey
    private let cache: CredentialCache
    let cacheKey: String

    init(teamID: String, keyID: String, key: SigningKey, cache: CredentialCache) {
        self.teamID = teamID
        self.keyID = keyID
        self.key = key
        self.cache = cache
        cacheKey = "apns-\(teamID)-\(keyID)"
    }

    /// The current token, signing one only when no process holds a fresh one.
    func current() throws -> String {
        try cache.credential(for: cacheKey, policy: Self.policy) {
            let now = cache.now
            let iat = Int64(now.timeIntervalSince1970)
            let jwt = try Self.sign(teamID: teamID, keyID: keyID, iat: iat, key: key)
            let issued = Date(timeIntervalSince1970: Double(iat))
            return CachedCredential(token: jwt, issuedAt: issued, expiresAt: issued.addingTimeInterval(Self.lifetime))
        }.token
    }

    /// Apple said `token` expired: drop it so the next `current()` signs a new one. Refused (and
    /// false returned) when the token is younger than 20 minutes, since replacing it that soon
    /// earns `TooManyProviderTokenUpdates`.
    @discardableResult
    func invalidate(_ token: String) -> Bool {
        cache.invalidate(key: cacheKey, token: token, policy: Self.policy)
    }

    /// `{"alg":"ES256","kid":K}.{"iss":T,"iat":N}`, ES256 with a raw r‖s signature.
    static func sign(teamID: String, keyID: String, iat: Int64, key: SigningKey) throws -> String {
        try JWT.sign(header: [("alg", .string("ES256")), ("kid", .string(keyID))],
                     claims: [("iss", .string(teamID)), ("iat", .int(iat))], key: key)
    }
}
