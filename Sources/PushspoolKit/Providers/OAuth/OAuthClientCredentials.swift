import PushspoolCore
import PushspoolHTTP

/// The access token of a service that takes the OAuth client-credentials grant (HMS, ADM; WNS
/// builds its own form): `grant_type=client_credentials`, the client's id and secret, and the
/// service's `extra` fields, cached per (service, client id) across processes.
enum OAuthClientCredentials {
    static func source(service: String, clientID: String, secret: Secret, tokenURL: String, extra: [(String, String)],
                       http: any HTTPClient, context: ProviderContext) -> AccessTokenSource {
        let cache = context.credentials, log = context.log
        let endpoint = OAuthTokenEndpoint(url: tokenURL, label: service)
        let form = [("grant_type", "client_credentials")] + extra + [("client_id", clientID), ("client_secret", secret.value)]
        return AccessTokenSource(key: "\(service)-\(clientID)", cache: cache) {
            let now = cache.now
            let result = endpoint.fetch(form: form, using: http, now: now)
            if case .success(let c) = result {
                log.debug("\(service): new access token, valid \(Int(c.expiresAt.timeIntervalSince(now))) s")
            }
            return result
        }
    }
}
