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
        for (name, section) in self.providers.sorted(by: { $0.key < $1.key }) {
            var pairs: [(String, JSONValue)] = ProviderKind(rawValue: name) == section.kind ? [] : [("type", .string(section.kind.rawValue))]
            switch section {
            case .apns(let a):
                pairs += [("team_id", .string(a.teamID)), ("key_id", .string(a.keyID)),
                          ("key_file", .string(a.keyFile)), ("topic", a.topic.isEmpty ? .null : .string(a.topic)),
                          ("environment", .string(a.environment)), ("endpoint", url(a.baseURL))]
                if a.productionEndpoint != nil || a.sandboxEndpoint != nil {
                    pairs += [("production_endpoint", url(a.baseURL(for: .production))), ("sandbox_endpoint", url(a.baseURL(for: .development)))]
                }
                if a.channelsEndpoint != nil || a.sandboxChannelsEndpoint != nil {
                    pairs += [("channels_endpoint", url(a.channelsURL(for: .production))),
                              ("sandbox_channels_endpoint", url(a.channelsURL(for: .development)))]
                }
            case .fcm(let f):
                pairs += [("service_account_file", .string(f.serviceAccountFile)), ("endpoint", url(f.endpoint))]
                if let iid = f.iidEndpoint { pairs.append(("iid_endpoint", url(iid))) }
            case .wns(let w):
                pairs += [("auth", .string(w.auth.rawValue)), ("tenant_id", opt(w.tenantID)),
                          ("client_id", .string(w.clientID)), ("client_secret", .string(Redaction.mask)),
                          ("token_endpoint", url(w.tokenEndpoint)), ("scope", opt(w.scope)),
                          ("allowed_hosts", .array(w.allowedHosts.map(JSONValue.string)))]
            case .azure(let z):
                pairs += [("connection_string", .string(Redaction.mask)), ("hub", .string(z.hub)),
                          ("fcm_format", .string(z.fcmFormat)), ("api_version", opt(z.apiVersion))]
            case .webpush(let w):
                pairs += [("vapid_private_key_file", .string(w.vapidPrivateKeyFile)), ("subject", .string(w.subject)),
                          ("allowed_hosts", .array(w.allowedHosts.map(JSONValue.string))),
                          ("declarative", .string(w.declarative.rawValue))]
            case .hms(let h):
                pairs += [("app_id", .string(h.appID)), ("client_id", .string(h.clientID)), ("client_secret", .string(Redaction.mask)),
                          ("endpoint", url(h.endpoint ?? HMSConfig.defaultEndpoint)),
                          ("token_endpoint", url(h.tokenEndpoint ?? HMSConfig.defaultTokenEndpoint))]
            case .adm(let a):
                pairs += [("client_id", .string(a.clientID)), ("client_secret", .string(Redaction.mask)),
                          ("endpoint", url(a.endpoint ?? ADMConfig.defaultEndpoint)),
                          ("token_endpoint", url(a.tokenEndpoint ?? ADMConfig.defaultTokenEndpoint))]
            case .sandbox(let s):
                if name == "sandbox" { continue }
                pairs += [("outbox", .string(resolve(s.outbox ?? outboxPath).path))]
            }
            providers.append((name, .object(pairs)))
        }
        providers.append(("sandbox", .object([("outbox", .string(resolve(outboxPath).path))])))
        // The rate caps and (for the HTTP providers, default included) the connection caps go
        // into their provider's object.
        providers = providers.map { name, value in
            guard case .object(var pairs) = value else { return (name, value) }
            if let limit = maxPerSecond[name] {
                pairs.append(("max_per_second", limit == limit.rounded() ? .int(Int64(limit)) : .double(limit)))
            }
            if providerKind(name)?.connects == true {
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
            ("apps", .object(apps.sorted { $0.key < $1.key }.map { id, app in
                (id, .object([("routes", .object(Platform.allCases.map { ($0.rawValue, .string(app.routes[$0] ?? "sandbox")) })),
                              ("apns_topic", opt(apnsTopic(of: id))),
                              ("max_per_second", app.maxPerSecond.map { $0 == $0.rounded() ? .int(Int64($0)) : .double($0) } ?? .null),
                              ("frequency_cap", app.frequencyCap.map { .object([("max", .int(Int64($0.max))), ("per_hours", .int(Int64($0.perHours)))]) } ?? .null)]))
            })),
            ("default_app", .string(defaultApp)),
            ("tls", .object([("ca_file", opt(tls.caFile))])),
            ("metrics", .object([("textfile", opt(metrics.textfile.map { resolve($0).path })),
                                 ("interval_seconds", .int(Int64(metrics.intervalSeconds))),
                                 ("instance", opt(metrics.instance))])),
        ]
        if let http { sections.append(("http", http.redacted(resolve: resolve))) }
        if !webhooks.isEmpty { sections.append(("webhooks", .array(webhooks.map(\.redacted)))) }
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
            ("operators_file", path(operatorsFile)),
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

extension WebhookConfig {
    /// The entry with its secret as `***` and its URL's query (which may carry a receiver's
    /// token) masked too.
    var redacted: JSONValue {
        let shownURL = url.firstIndex(of: "?").map { String(url[..<$0]) + "?" + Redaction.mask } ?? url
        return .object([
            ("url", .string(shownURL)),
            ("secret", .string(Redaction.mask)),
            ("events", .array(events.map { .string($0.rawValue) })),
            ("apps", apps.map { .array($0.map(JSONValue.string)) } ?? .null),
            ("private_addresses", .bool(privateAddresses)),
        ])
    }
}
