/// Every key `pushspool.json` may hold, section by section. These are the lists the parser
/// accepts keys from (a key in none of them is "unknown key"), so they are also what the
/// Configuration reference is checked against: a key added here without a row in its table
/// fails the documentation test.
public enum ConfigKeys {
    /// The top level. `owner_lease_seconds` is listed so that it gets its own message (removed).
    public static let top = ["spool", "registry", "registry_connections", "concurrency", "retry", "routes", "providers", "tls", "metrics",
                             "owner_lease_seconds", "http", "max_jobs", "apps", "default_app",
                             "webhooks", "local_time_grace_minutes", "queue", "receipts"]
    public static let queue = ["enabled", "chunk_size", "lease_seconds", "max_chunks", "durable_outcomes", "keep_days"]
    public static let receipts = ["keep_days"]
    public static let retry = ["max_attempts", "base_delay_ms", "max_delay_ms"]
    public static let tls = ["ca_file"]
    public static let metrics = ["textfile", "interval_seconds", "instance"]
    /// `routes`, at the top level and in each app: one key per platform name a job may list.
    public static let routes = ["apns", "fcm", "gcm", "wns", "web", "hms", "adm"]
    /// Each entry of `apps`.
    public static let app = ["routes", "apns_topic", "max_per_second", "frequency_cap", "default_tz", "quiet_hours", "track"]
    public static let frequencyCap = ["max", "per_hours"]
    /// `quiet_hours` (an app's; a job's takes the same two).
    public static let quietHours = QuietHours.fields
    public static let http = ["listen", "tls", "users_file", "tokens_file", "operators_file", "users_may_send", "client_tag_prefixes",
                              "rate_limit_per_minute", "timeout_seconds", "max_connections", "max_connections_per_address",
                              "trusted_proxies", "handles_move_between_users", "request_timeout_seconds"]
    public static let httpTLS = ["cert_file", "key_file"]
    /// Each entry of the `webhooks` array.
    public static let webhook = ["url", "secret", "events", "apps", "private_addresses"]

    /// What every provider section takes whatever its type: `type`, `max_per_second`, and
    /// `max_connections` for those that open connections.
    public static func providerCommon(_ kind: ProviderKind) -> [String] {
        ["type", "max_per_second"] + (kind.connects ? ["max_connections"] : [])
    }

    /// A provider section's own keys, by its type.
    public static func provider(_ kind: ProviderKind) -> [String] {
        switch kind {
        case .apns: ["team_id", "key_id", "key_file", "topic", "environment", "endpoint", "production_endpoint", "sandbox_endpoint",
                     "channels_endpoint", "sandbox_channels_endpoint"]
        case .fcm: ["service_account_file", "endpoint", "iid_endpoint"]
        case .wns: ["auth", "tenant_id", "client_id", "client_secret", "token_endpoint", "scope", "allowed_hosts"]
        case .azure: ["connection_string", "hub", "fcm_format", "api_version"]
        case .webpush: ["vapid_private_key_file", "subject", "allowed_hosts", "declarative"]
        case .sandbox: ["outbox"]
        case .hms: ["app_id", "client_id", "client_secret", "endpoint", "token_endpoint"]
        case .adm: ["client_id", "client_secret", "endpoint", "token_endpoint"]
        }
    }

    /// Every key as a path, as the reference's tables name them: `queue.chunk_size`,
    /// `apps.<id>.frequency_cap.max`, `providers.<name>.max_per_second` (every type),
    /// `providers.<name>.max_connections` (every type but the sandbox), `providers.apns.team_id`
    /// (a section of that type, whatever its name), `webhooks[].url`.
    public static var paths: [String] {
        var out: [String] = []
        for key in top {
            switch key {
            case "queue": out += queue.map { "queue.\($0)" }
            case "receipts": out += receipts.map { "receipts.\($0)" }
            case "retry": out += retry.map { "retry.\($0)" }
            case "tls": out += tls.map { "tls.\($0)" }
            case "metrics": out += metrics.map { "metrics.\($0)" }
            case "routes": out += routes.map { "routes.\($0)" }
            case "apps":
                for appKey in app {
                    switch appKey {
                    case "routes": out += routes.map { "apps.<id>.routes.\($0)" }
                    case "frequency_cap": out += frequencyCap.map { "apps.<id>.frequency_cap.\($0)" }
                    case "quiet_hours": out += quietHours.map { "apps.<id>.quiet_hours.\($0)" }
                    default: out.append("apps.<id>.\(appKey)")
                    }
                }
            case "http":
                for httpKey in http {
                    if httpKey == "tls" { out += httpTLS.map { "http.tls.\($0)" } } else { out.append("http.\(httpKey)") }
                }
            case "webhooks": out += webhook.map { "webhooks[].\($0)" }
            case "providers":
                out += ["type", "max_per_second", "max_connections"].map { "providers.<name>.\($0)" }
                for kind in ProviderKind.allCases { out += provider(kind).map { "providers.\(kind.rawValue).\($0)" } }
            default: out.append(key)
            }
        }
        return out
    }
}
