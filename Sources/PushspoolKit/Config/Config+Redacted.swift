import Foundation
import PushspoolCore

extension Config {
    /// The effective configuration as JSON with every secret shown as `Redaction.mask` (`***`),
    /// endpoints and the registry through `Redaction.connectionString`, for
    /// `config --check` (secrets never reach a terminal or a log).
    public func redacted() -> JSONValue {
        func opt(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        func url(_ s: String?) -> JSONValue { s.map { .string(Redaction.connectionString($0)) } ?? .null }
        var providers: [(String, JSONValue)] = []
        if let a = apns {
            providers.append(("apns", .object([("team_id", .string(a.teamID)), ("key_id", .string(a.keyID)),
                                               ("key_file", .string(a.keyFile)), ("topic", .string(a.topic)),
                                               ("environment", .string(a.environment)), ("endpoint", url(a.baseURL))])))
        }
        if let f = fcm {
            providers.append(("fcm", .object([("service_account_file", .string(f.serviceAccountFile)), ("endpoint", url(f.endpoint))])))
        }
        if let w = wns {
            providers.append(("wns", .object([("auth", .string(w.auth.rawValue)), ("tenant_id", opt(w.tenantID)),
                                              ("client_id", .string(w.clientID)), ("client_secret", .string(Redaction.mask)),
                                              ("token_endpoint", url(w.tokenEndpoint)), ("scope", opt(w.scope)),
                                              ("allowed_hosts", .array(w.allowedHosts.map(JSONValue.string)))])))
        }
        if let z = azure {
            providers.append(("azure", .object([("connection_string", .string(Redaction.mask)), ("hub", .string(z.hub)),
                                                ("fcm_format", .string(z.fcmFormat)), ("api_version", opt(z.apiVersion))])))
        }
        if let w = webpush {
            providers.append(("webpush", .object([("vapid_private_key_file", .string(w.vapidPrivateKeyFile)),
                                                  ("subject", .string(w.subject)),
                                                  ("allowed_hosts", .array(w.allowedHosts.map(JSONValue.string))),
                                                  ("declarative", .string(w.declarative.rawValue))])))
        }
        providers.append(("sandbox", .object([("outbox", .string(resolve(outboxPath).path))])))
        // The rate caps and (for the HTTP providers, default included) the connection caps go
        // into their provider's object.
        providers = providers.map { name, value in
            guard case .object(var pairs) = value else { return (name, value) }
            if let limit = maxPerSecond[name] {
                pairs.append(("max_per_second", limit == limit.rounded() ? .int(Int64(limit)) : .double(limit)))
            }
            if Config.connectingProviders.contains(name) {
                pairs.append(("max_connections", .int(Int64(maxConnections(for: name)))))
            }
            return (name, .object(pairs))
        }
        var sections: [(String, JSONValue)] = [
            ("spool", .string(spool)),
            ("registry", .string(RegistryLocation.redacted(registryPath))),
            ("concurrency", .int(Int64(concurrency))),
            ("max_jobs", .int(Int64(maxJobs))),
            // Rounded: 1001 ms is 1.001 s, which times 1000 is 1000.9999999999999.
            ("retry", .object([("max_attempts", .int(Int64(retry.maxAttempts))),
                               ("base_delay_ms", .int(Int64((retry.baseDelay * 1000).rounded()))),
                               ("max_delay_ms", .int(Int64((retry.maxDelay * 1000).rounded())))])),
            ("routes", .object(Platform.allCases.map { ($0.rawValue, .string(routes[$0] ?? "sandbox")) })),
            ("providers", .object(providers)),
            ("tls", .object([("ca_file", opt(tls.caFile))])),
            ("metrics", .object([("textfile", opt(metrics.textfile.map { resolve($0).path })),
                                 ("interval_seconds", .int(Int64(metrics.intervalSeconds))),
                                 ("instance", opt(metrics.instance))])),
            ("owner_lease_seconds", .int(Int64(ownerLeaseSeconds))),
        ]
        if let http { sections.append(("http", http.redacted(resolve: resolve))) }
        return .object(sections)
    }
}

extension HTTPConfig {
    /// The `http` section with its file paths resolved. The files hold only password hashes and
    /// token digests, and are not printed at all: only where they are.
    func redacted(resolve: (String) -> URL) -> JSONValue {
        func path(_ s: String?) -> JSONValue { s.map { .string(resolve($0).path) } ?? .null }
        return .object([
            ("listen", .string(listen)),
            ("tls", .object([("cert_file", path(tlsCertFile)), ("key_file", path(tlsKeyFile))])),
            ("users_file", path(usersFile)),
            ("tokens_file", path(tokensFile)),
            ("users_may_send", .bool(usersMaySend)),
            ("client_tag_prefixes", .array(clientTagPrefixes.map(JSONValue.string))),
            ("rate_limit_per_minute", .int(Int64(rateLimitPerMinute))),
            ("timeout_seconds", .int(Int64(timeoutSeconds))),
            ("max_connections", .int(Int64(maxConnections))),
            ("max_connections_per_address", .int(Int64(maxConnectionsPerAddress))),
            ("trusted_proxies", .array(trustedProxies.map { .string($0.description) })),
            ("handles_move_between_users", .bool(handlesMoveBetweenUsers)),
            ("request_timeout_seconds", .int(Int64(requestTimeoutSeconds))),
        ])
    }
}
