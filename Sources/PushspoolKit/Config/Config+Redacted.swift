import PushspoolCore

extension Config {
    /// The effective configuration as JSON with every secret replaced by `<redacted>`, for
    /// `config --check` (secrets never reach a terminal or a log).
    public func redacted() -> JSONValue {
        func opt(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        var providers: [(String, JSONValue)] = []
        if let a = apns {
            providers.append(("apns", .object([("team_id", .string(a.teamID)), ("key_id", .string(a.keyID)),
                                               ("key_file", .string(a.keyFile)), ("topic", .string(a.topic)),
                                               ("environment", .string(a.environment)), ("endpoint", .string(a.baseURL))])))
        }
        if let f = fcm {
            providers.append(("fcm", .object([("service_account_file", .string(f.serviceAccountFile)), ("endpoint", opt(f.endpoint))])))
        }
        if let w = wns {
            providers.append(("wns", .object([("client_id", .string(w.clientID)), ("client_secret", "<redacted>"),
                                              ("token_endpoint", opt(w.tokenEndpoint)), ("scope", opt(w.scope)),
                                              ("allowed_hosts", .array(w.allowedHosts.map(JSONValue.string)))])))
        }
        if let z = azure {
            providers.append(("azure", .object([("connection_string", "<redacted>"), ("hub", .string(z.hub)),
                                                ("fcm_format", .string(z.fcmFormat)), ("api_version", opt(z.apiVersion))])))
        }
        if let w = webpush {
            providers.append(("webpush", .object([("vapid_private_key_file", .string(w.vapidPrivateKeyFile)),
                                                  ("subject", .string(w.subject)),
                                                  ("allowed_hosts", .array(w.allowedHosts.map(JSONValue.string)))])))
        }
        providers.append(("sandbox", .object([("outbox", .string(resolve(outboxPath).path))])))
        // The rate caps go into their provider's object.
        providers = providers.map { name, value in
            guard let limit = maxPerSecond[name], case .object(let pairs) = value else { return (name, value) }
            return (name, .object(pairs + [("max_per_second", limit == limit.rounded() ? .int(Int64(limit)) : .double(limit))]))
        }
        return .object([
            ("spool", .string(spool)),
            ("registry", .string(RegistryLocation.redacted(registryPath))),
            ("concurrency", .int(Int64(concurrency))),
            // Rounded: 1001 ms is 1.001 s, which times 1000 is 1000.9999999999999.
            ("retry", .object([("max_attempts", .int(Int64(retry.maxAttempts))),
                               ("base_delay_ms", .int(Int64((retry.baseDelay * 1000).rounded()))),
                               ("max_delay_ms", .int(Int64((retry.maxDelay * 1000).rounded())))])),
            ("routes", .object(Platform.allCases.map { ($0.rawValue, .string(routes[$0] ?? "sandbox")) })),
            ("providers", .object(providers)),
            ("tls", .object([("ca_file", opt(tls.caFile))])),
            ("metrics", .object([("textfile", opt(metrics.textfile.map { resolve($0).path })),
                                 ("interval_seconds", .int(Int64(metrics.intervalSeconds)))])),
            ("owner_lease_seconds", .int(Int64(ownerLeaseSeconds))),
        ])
    }
}
