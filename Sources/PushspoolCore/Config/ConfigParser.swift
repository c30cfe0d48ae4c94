/// Everything wrong with a configuration, one line per problem, each naming its key
/// (`providers.apns.team_id: …`) or, for a file that is not JSON, the byte where it stops being JSON.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    public var problems: [String]
    public init(problems: [String]) { self.problems = problems }
    public var description: String { problems.joined(separator: "\n") }
}

/// `pushspool.json` (README "Configuration") from bytes to a validated `Config`, resolving
/// `env:NAME` values from the environment it is given and reporting every problem at once. Pure:
/// no file is read or checked here (`ConfigLoader` reads the file; providers check their key files).
public enum ConfigParser {
    /// The provider names a route may name.
    public static let providerNames = ProviderKind.allCases.map(\.rawValue)

    /// Parses the bytes of a config file; `source` (its path as given) prefixes a JSON syntax error.
    /// `requireSecrets: false` lets `env:` values that are not set pass (`Config.unsetSecrets`).
    public static func parse(_ bytes: [UInt8], source: String, environment: [String: String],
                             requireSecrets: Bool = true) throws(ConfigError) -> Config {
        let json: JSONValue
        do { json = try JSONParser.parse(bytes) } catch {
            throw ConfigError(problems: ["\(source): \(error)"])
        }
        return try parse(json, environment: environment, requireSecrets: requireSecrets)
    }

    /// Parses a config document.
    public static func parse(_ json: JSONValue, environment: [String: String] = [:],
                             requireSecrets: Bool = true) throws(ConfigError) -> Config {
        var reader = Reader(environment: environment, requireSecrets: requireSecrets)
        var config = reader.config(json)
        if !reader.problems.isEmpty { throw ConfigError(problems: reader.problems) }
        config.unsetSecrets = reader.unset
        return config
    }

    struct Reader {
        let environment: [String: String]
        var requireSecrets = true
        var problems: [String] = []
        /// `env:` values let through unset (`requireSecrets: false`), by key.
        var unset: [String: UnsetSecret] = [:]

        mutating func problem(_ key: String, _ message: String) { problems.append("\(key): \(message)") }

        /// A name someone typed (a key, an environment variable) as it goes into a problem: as
        /// typed when it is a plain name, else quoted, so that every problem stays one line
        /// that starts with its key (found by the config fuzz target).
        static func fieldName(_ name: String) -> String {
            let plain = !name.isEmpty && name.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-")
            }
            return plain ? name : JSONValue.quoted(name)
        }

        /// The object's pairs, after rejecting keys not in `allowed`.
        mutating func object(_ v: JSONValue?, _ key: String, allowed: [String]) -> [String: JSONValue]? {
            guard let v else { return nil }
            guard case .object(let pairs) = v else { problem(key, "must be an object, got \(v.typeName)"); return nil }
            var out: [String: JSONValue] = [:]
            for (k, value) in pairs {
                if allowed.contains(k) {
                    out[k] = value
                } else {
                    let hint = Spelling.closest(to: k, among: allowed).map { " (did you mean \"\($0)\"?)" } ?? ""
                    problem(key.isEmpty ? Self.fieldName(k) : "\(key).\(Self.fieldName(k))", "unknown key" + hint)
                }
            }
            return out
        }

        /// A string value, resolving `env:NAME`. `null` counts as absent; an empty string is a
        /// problem (an empty `spool` made the config file's own folder a spool; found by the
        /// config fuzz target).
        mutating func string(_ v: JSONValue?, _ key: String) -> String? {
            guard let v, v != .null else { return nil }
            guard case .string(let s) = v else { problem(key, "must be a string, got \(v.typeName)"); return nil }
            if s.isEmpty { problem(key, "must not be empty"); return nil }
            if s.hasPrefix("env:") {
                let name = String(s.dropFirst(4))
                guard let value = environment[name], !value.isEmpty else {
                    if !requireSecrets {
                        let secret = UnsetSecret(key: key, variable: name)
                        unset[key] = secret
                        return secret.placeholder
                    }
                    problem(key, "environment variable \(Self.fieldName(name)) is not set")
                    return nil
                }
                return value
            }
            return s
        }

        /// A non-empty array of host names, lowercased.
        mutating func hostList(_ v: JSONValue?, _ key: String) -> [String]? {
            guard let v else { return nil }
            guard case .array(let items) = v, !items.isEmpty, items.allSatisfy({ $0.stringValue.map { !$0.isEmpty } ?? false }) else {
                problem(key, "must be a non-empty array of host names")
                return nil
            }
            return items.compactMap(\.stringValue).map { $0.lowercased() }
        }

        mutating func required(_ v: JSONValue?, _ key: String) -> String {
            if v == nil || v == .null { problem(key, "is required"); return "" }
            return string(v, key) ?? ""
        }

        mutating func int(_ v: JSONValue?, _ key: String, range: ClosedRange<Int>) -> Int? {
            guard let v, v != .null else { return nil }
            guard case .int(let i) = v, range.contains(Int(i)) else {
                problem(key, "must be an integer in \(range.lowerBound)…\(range.upperBound)")
                return nil
            }
            return Int(i)
        }

        mutating func config(_ json: JSONValue) -> Config {
            var c = Config()
            // One problem for a document that is not an object (not also one with an empty key).
            guard case .object = json else { problem("config", "must be a JSON object"); return c }
            let top = object(json, "", allowed: ["spool", "registry", "concurrency", "retry", "routes", "providers", "tls", "metrics",
                                                 "owner_lease_seconds", "http", "max_jobs"]) ?? [:]
            if let s = string(top["spool"], "spool") { c.spool = s }
            c.registry = string(top["registry"], "registry")
            if let n = int(top["concurrency"], "concurrency", range: 1...100_000) { c.concurrency = n }
            if let n = int(top["max_jobs"], "max_jobs", range: 1...1024) { c.maxJobs = n }
            if let n = int(top["owner_lease_seconds"], "owner_lease_seconds", range: 2...86_400) { c.ownerLeaseSeconds = n }
            if let r = object(top["retry"], "retry", allowed: ["max_attempts", "base_delay_ms", "max_delay_ms"]) {
                if let n = int(r["max_attempts"], "retry.max_attempts", range: 1...100) { c.retry.maxAttempts = n }
                if let n = int(r["base_delay_ms"], "retry.base_delay_ms", range: 1...3_600_000) { c.retry.baseDelay = Double(n) / 1000 }
                if let n = int(r["max_delay_ms"], "retry.max_delay_ms", range: 1...86_400_000) { c.retry.maxDelay = Double(n) / 1000 }
            }
            if let p = object(top["providers"], "providers", allowed: ConfigParser.providerNames) {
                providers(p, into: &c)
            }
            if let t = object(top["tls"], "tls", allowed: ["ca_file"]) { c.tls.caFile = string(t["ca_file"], "tls.ca_file") }
            if let m = object(top["metrics"], "metrics", allowed: ["textfile", "interval_seconds", "instance"]) {
                c.metrics.textfile = string(m["textfile"], "metrics.textfile")
                c.metrics.instance = string(m["instance"], "metrics.instance")
                if let n = int(m["interval_seconds"], "metrics.interval_seconds", range: 1...3600) { c.metrics.intervalSeconds = n }
            }
            if let h = object(top["http"], "http", allowed: Self.httpKeys) { c.http = http(h) }
            // Default route: the provider of the same name when configured, else the sandbox.
            c.routes[.apns] = c.apns != nil ? "apns" : "sandbox"
            c.routes[.fcm] = c.fcm != nil ? "fcm" : "sandbox"
            c.routes[.wns] = c.wns != nil ? "wns" : "sandbox"
            c.routes[.web] = c.webpush != nil ? "webpush" : "sandbox"
            if let routes = object(top["routes"], "routes", allowed: ["apns", "fcm", "gcm", "wns", "web"]) {
                for (name, value) in routes.sorted(by: { $0.key < $1.key }) {
                    let key = "routes.\(name)"
                    guard let provider = string(value, key) else { continue }
                    guard ConfigParser.providerNames.contains(provider) else {
                        problem(key, "unknown provider \(JSONValue.quoted(provider)) (expected \(ConfigParser.providerNames.joined(separator: ", ")))")
                        continue
                    }
                    c.routes[Platform(name: name)!] = provider
                }
            }
            for platform in Platform.allCases {
                let provider = c.routes[platform] ?? "sandbox"
                guard let kind = ProviderKind(rawValue: provider) else { continue }   // refused above
                let hasSection = switch kind {
                case .apns: c.apns != nil
                case .fcm: c.fcm != nil
                case .wns: c.wns != nil
                case .webpush: c.webpush != nil
                case .azure: c.azure != nil
                case .sandbox: true
                }
                if !hasSection || !kind.delivers(platform) {
                    let cannot = !kind.delivers(platform)
                    let why = cannot
                        ? "provider \"\(provider)\" cannot deliver to \(platform.rawValue)"
                        : "provider \"\(provider)\" needs a providers.\(provider) section"
                    problem("routes.\(platform.rawValue)", why)
                }
            }
            return c
        }

        mutating func providers(_ p: [String: JSONValue], into c: inout Config) {
            // Every provider takes `max_per_second`: its request rate cap across all jobs.
            for (name, value) in p {
                guard case .object(let pairs) = value, let limit = pairs.first(where: { $0.0 == "max_per_second" })?.1 else { continue }
                let key = "providers.\(name).max_per_second"
                switch limit {
                case .int(let n) where n >= 1 && n <= 1_000_000: c.maxPerSecond[name] = Double(n)
                case .double(let d) where d >= 0.01 && d <= 1_000_000: c.maxPerSecond[name] = d
                case .null: break
                default: problem(key, "must be a number of requests per second from 0.01 to 1000000")
                }
            }
            // The HTTP providers take `max_connections`: connections per origin at most.
            for name in Config.connectingProviders {
                guard case .object(let pairs)? = p[name], let value = pairs.first(where: { $0.0 == "max_connections" })?.1 else { continue }
                if let n = int(value, "providers.\(name).max_connections", range: 1...64) { c.maxConnectionsByProvider[name] = n }
            }
            if let a = object(p["apns"], "providers.apns", allowed: ["team_id", "key_id", "key_file", "topic", "environment", "endpoint", "max_per_second", "max_connections"]) {
                var apns = APNsConfig(teamID: required(a["team_id"], "providers.apns.team_id"),
                                      keyID: required(a["key_id"], "providers.apns.key_id"),
                                      keyFile: required(a["key_file"], "providers.apns.key_file"),
                                      topic: required(a["topic"], "providers.apns.topic"))
                if let env = string(a["environment"], "providers.apns.environment") {
                    if env == "production" || env == "sandbox" || env == "development" {
                        apns.environment = env == "development" ? "sandbox" : env
                    } else {
                        problem("providers.apns.environment", "must be \"production\" or \"sandbox\", got \(JSONValue.quoted(env))")
                    }
                }
                apns.endpoint = string(a["endpoint"], "providers.apns.endpoint")
                c.apns = apns
            }
            if let f = object(p["fcm"], "providers.fcm", allowed: ["service_account_file", "endpoint", "max_per_second", "max_connections"]) {
                c.fcm = FCMConfig(serviceAccountFile: required(f["service_account_file"], "providers.fcm.service_account_file"),
                                  endpoint: string(f["endpoint"], "providers.fcm.endpoint"))
            }
            if let w = object(p["wns"], "providers.wns", allowed: ["auth", "tenant_id", "client_id", "client_secret", "token_endpoint", "scope", "allowed_hosts", "max_per_second", "max_connections"]) {
                var wns = WNSConfig(clientID: required(w["client_id"], "providers.wns.client_id"),
                                    clientSecret: Secret(required(w["client_secret"], "providers.wns.client_secret")),
                                    tokenEndpoint: string(w["token_endpoint"], "providers.wns.token_endpoint"),
                                    scope: string(w["scope"], "providers.wns.scope"))
                if let hosts = hostList(w["allowed_hosts"], "providers.wns.allowed_hosts") { wns.allowedHosts = hosts }
                if let auth = string(w["auth"], "providers.wns.auth") {
                    if let a = WNSConfig.Auth(rawValue: auth) { wns.auth = a } else {
                        problem("providers.wns.auth", "must be \"package\" or \"entra\", got \(JSONValue.quoted(auth))")
                    }
                }
                wns.tenantID = string(w["tenant_id"], "providers.wns.tenant_id")
                c.wns = wns
            }
            if let z = object(p["azure"], "providers.azure", allowed: ["connection_string", "hub", "fcm_format", "api_version", "max_per_second", "max_connections"]) {
                var azure = AzureConfig(connectionString: Secret(required(z["connection_string"], "providers.azure.connection_string")),
                                        hub: required(z["hub"], "providers.azure.hub"))
                if let format = string(z["fcm_format"], "providers.azure.fcm_format") {
                    if format == "fcmV1" || format == "gcm" { azure.fcmFormat = format } else {
                        problem("providers.azure.fcm_format", "must be \"fcmV1\" or \"gcm\", got \(JSONValue.quoted(format))")
                    }
                }
                azure.apiVersion = string(z["api_version"], "providers.azure.api_version")
                c.azure = azure
            }
            if let w = object(p["webpush"], "providers.webpush", allowed: ["vapid_private_key_file", "subject", "allowed_hosts", "declarative", "max_per_second", "max_connections"]) {
                var webpush = WebPushConfig(vapidPrivateKeyFile: required(w["vapid_private_key_file"], "providers.webpush.vapid_private_key_file"),
                                            subject: required(w["subject"], "providers.webpush.subject"))
                if let hosts = hostList(w["allowed_hosts"], "providers.webpush.allowed_hosts") { webpush.allowedHosts = hosts }
                if let mode = string(w["declarative"], "providers.webpush.declarative") {
                    if let d = WebPushConfig.Declarative(rawValue: mode) { webpush.declarative = d } else {
                        problem("providers.webpush.declarative", "must be \"auto\", \"always\" or \"never\", got \(JSONValue.quoted(mode))")
                    }
                }
                c.webpush = webpush
            }
            if let s = object(p["sandbox"], "providers.sandbox", allowed: ["outbox", "max_per_second"]) {
                c.sandbox.outbox = string(s["outbox"], "providers.sandbox.outbox")
            }
        }
    }
}
