import PushspoolCore
import PushspoolHTTP

/// A provider that takes the OAuth client-credentials grant (HMS, ADM; WNS builds its own form),
/// set up alike: its client's id and secret and its two https URLs checked (one line per
/// problem, naming the key under `providers.<service>`), one HTTP client for its sends and its
/// tokens, and the access token: `grant_type=client_credentials`, the client's id and secret,
/// and the service's `extra` fields, cached per (service, client id) across processes.
struct OAuthClientCredentials {
    /// The send endpoint, without a trailing slash.
    let endpoint: String
    let http: any HTTPClient
    let tokens: AccessTokenSource

    /// `problems`: the provider's own, listed first and thrown with these.
    init(service: String, clientID: String, secret: Secret, endpoint: String, tokenURL: String,
         extra: [(String, String)] = [], problems: [String] = [], context: ProviderContext) throws {
        var problems = problems
        if clientID.isEmpty { problems.append("providers.\(service).client_id: missing") }
        if secret.value.isEmpty { problems.append("providers.\(service).client_secret: missing or empty") }
        if let p = ProviderSetupChecks.httpsURLProblem(endpoint, field: "providers.\(service).endpoint") { problems.append(p) }
        if let p = ProviderSetupChecks.httpsURLProblem(tokenURL, field: "providers.\(service).token_endpoint") { problems.append(p) }
        guard problems.isEmpty else { throw ProviderSetupError(problems) }

        var options = HTTPClientOptions()   // the context adds tls.ca_file
        options.maxConnectionsPerHost = context.config.maxConnections(for: service)
        let http = try context.makeHTTPClient(options)
        self.http = http
        self.endpoint = FCMProvider.trimmingSlash(endpoint)
        tokens = Self.source(service: service, clientID: clientID, secret: secret, tokenURL: tokenURL, extra: extra,
                             http: http, context: context)
    }

    private static func source(service: String, clientID: String, secret: Secret, tokenURL: String, extra: [(String, String)],
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
