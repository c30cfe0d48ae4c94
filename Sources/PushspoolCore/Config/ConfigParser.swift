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

        /// `{"max": N, "per_hours": H}`, both required integers.
        mutating func frequencyCap(_ json: JSONValue, _ key: String) -> FrequencyCap? {
            guard let o = object(json, key, allowed: ConfigKeys.frequencyCap) else {
                if json == .null { problem(key, "must be an object") }
                return nil
            }
            for field in ConfigKeys.frequencyCap where o[field] == nil || o[field] == .null { problem("\(key).\(field)", "is required") }
            guard let max = int(o["max"], "\(key).max", range: FrequencyCap.maxRange),
                  let hours = int(o["per_hours"], "\(key).per_hours", range: FrequencyCap.perHoursRange) else { return nil }
            return FrequencyCap(max: max, perHours: hours)
        }

        mutating func config(_ json: JSONValue) -> Config {
            var c = Config()
            // One problem for a document that is not an object (not also one with an empty key).
            guard case .object = json else { problem("config", "must be a JSON object"); return c }
            let top = object(json, "", allowed: ConfigKeys.top) ?? [:]
            if let s = string(top["spool"], "spool") { c.spool = s }
            c.registry = string(top["registry"], "registry")
            // Two at least: the queue's LISTEN keeps one for itself.
            if let n = int(top["registry_connections"], "registry_connections", range: 2...1000) { c.registryConnections = n }
            if let n = int(top["concurrency"], "concurrency", range: 1...100_000) { c.concurrency = n }
            if let n = int(top["max_jobs"], "max_jobs", range: 1...1024) { c.maxJobs = n }
            if top["owner_lease_seconds"] != nil {   // the shared-NFS-spool lease of earlier releases
                problem("owner_lease_seconds", "removed — several hosts share work through the PostgreSQL queue (README: Several hosts); remove the key")
            }
            if let n = int(top["local_time_grace_minutes"], "local_time_grace_minutes", range: 0...1440) { c.localTimeGraceMinutes = n }
            if let q = object(top["queue"], "queue", allowed: ConfigKeys.queue) {
                if let b = bool(q["enabled"], "queue.enabled") { c.queue.enabled = b }
                if let n = int(q["chunk_size"], "queue.chunk_size", range: 1...1_000_000) { c.queue.chunkSize = n }
                if let n = int(q["lease_seconds"], "queue.lease_seconds", range: 3...3600) { c.queue.leaseSeconds = n }
                if let n = int(q["max_chunks"], "queue.max_chunks", range: 1...256) { c.queue.maxChunks = n }
                if let b = bool(q["durable_outcomes"], "queue.durable_outcomes") { c.queue.durableOutcomes = b }
                if let n = int(q["keep_days"], "queue.keep_days", range: 0...36_500) { c.queue.keepDays = n }
            }
            if let r = object(top["receipts"], "receipts", allowed: ConfigKeys.receipts) {
                if let n = int(r["keep_days"], "receipts.keep_days", range: 1...36_500) { c.receipts.keepDays = n }
            }
            if let r = object(top["retry"], "retry", allowed: ConfigKeys.retry) {
                if let n = int(r["max_attempts"], "retry.max_attempts", range: 1...100) { c.retry.maxAttempts = n }
                if let n = int(r["base_delay_ms"], "retry.base_delay_ms", range: 1...3_600_000) { c.retry.baseDelay = Double(n) / 1000 }
                if let n = int(r["max_delay_ms"], "retry.max_delay_ms", range: 1...86_400_000) { c.retry.maxDelay = Double(n) / 1000 }
            }
            appsDeclared = top["apps"] != nil && top["apps"] != .null
            providers(top["providers"], into: &c)
            if let t = object(top["tls"], "tls", allowed: ConfigKeys.tls) { c.tls.caFile = string(t["ca_file"], "tls.ca_file") }
            if let m = object(top["metrics"], "metrics", allowed: ConfigKeys.metrics) {
                c.metrics.textfile = string(m["textfile"], "metrics.textfile")
                c.metrics.instance = string(m["instance"], "metrics.instance")
                if let n = int(m["interval_seconds"], "metrics.interval_seconds", range: 1...3600) { c.metrics.intervalSeconds = n }
            }
            if let h = object(top["http"], "http", allowed: ConfigKeys.http) { c.http = http(h) }
            // Default route: the provider of the same name when configured, else the sandbox.
            c.routes[.apns] = c.apns != nil ? "apns" : "sandbox"
            c.routes[.fcm] = c.fcm != nil ? "fcm" : "sandbox"
            c.routes[.wns] = c.wns != nil ? "wns" : "sandbox"
            c.routes[.web] = c.webpush != nil ? "webpush" : "sandbox"
            c.routes[.hms] = c.hms != nil ? "hms" : "sandbox"
            c.routes[.adm] = c.adm != nil ? "adm" : "sandbox"
            c.routes = routes(top["routes"], "routes", over: c.routes, config: c)
            apps(top, into: &c)
            webhooks(top["webhooks"], into: &c)
            return c
        }

        /// Whether the file has `apps` (then a provider's `topic` may be left to each app).
        var appsDeclared = false

        /// A `routes` object over `base`: every name it gives checked to be a provider that exists
        /// and delivers that platform.
        mutating func routes(_ json: JSONValue?, _ key: String, over base: [Platform: String], config c: Config) -> [Platform: String] {
            var out = base
            if let routes = object(json, key, allowed: ConfigKeys.routes) {
                for (name, value) in routes.sorted(by: { $0.key < $1.key }) {
                    let field = "\(key).\(name)"
                    guard let provider = string(value, field) else { continue }
                    guard c.providerKind(provider) != nil || ProviderKind(rawValue: provider) != nil else {
                        let named = c.providers.keys.filter { ProviderKind(rawValue: $0) == nil }.sorted()
                        problem(field, "unknown provider \(JSONValue.quoted(provider)) (expected \((ConfigParser.providerNames + named).joined(separator: ", ")))")
                        continue
                    }
                    out[Platform(name: name)!] = provider
                }
            }
            for platform in Platform.allCases {
                let provider = out[platform] ?? "sandbox"
                guard let kind = c.providerKind(provider) ?? ProviderKind(rawValue: provider) else { continue }   // refused above
                if !kind.delivers(platform) {
                    problem("\(key).\(platform.rawValue)", "provider \"\(provider)\" cannot deliver to \(platform.rawValue)")
                } else if c.providerKind(provider) == nil {
                    problem("\(key).\(platform.rawValue)", "provider \"\(provider)\" needs a providers.\(provider) section")
                }
            }
            return out
        }

        /// `apps` and `default_app`; each app's routes start from the top-level ones. Two apps
        /// may not give one APNs provider the same topic (a device could not tell them apart).
        mutating func apps(_ top: [String: JSONValue], into c: inout Config) {
            guard appsDeclared, let json = top["apps"] else {
                if let name = string(top["default_app"], "default_app"), name != AppConfig.implicitID {
                    problem("default_app", "unknown app \(JSONValue.quoted(name)) (without \"apps\" the one app is \"\(AppConfig.implicitID)\")")
                }
                return
            }
            guard case .object(let entries) = json, !entries.isEmpty else {
                problem("apps", "must be an object of at least one app, got \(json.typeName)")
                return
            }
            var apps: [String: AppConfig] = [:]
            for (id, value) in entries {
                let key = "apps.\(Self.fieldName(id))"
                if let why = AppConfig.idProblem(id) { problem(key, why); continue }
                guard let a = object(value, key, allowed: ConfigKeys.app) else {
                    if value == .null { problem(key, "must be an object") }
                    continue
                }
                var app = AppConfig(routes: routes(a["routes"], "\(key).routes", over: c.routes, config: c))
                app.apnsTopic = string(a["apns_topic"], "\(key).apns_topic")
                if let limit = a["max_per_second"] { app.maxPerSecond = rate(limit, "\(key).max_per_second") }
                if let cap = a["frequency_cap"] { app.frequencyCap = frequencyCap(cap, "\(key).frequency_cap") }
                if let track = bool(a["track"], "\(key).track") { app.track = track }
                if let zone = string(a["default_tz"], "\(key).default_tz") {
                    if let why = ZoneName.problem(zone) { problem("\(key).default_tz", why) } else { app.defaultTZ = zone }
                }
                if let quiet = a["quiet_hours"] {
                    var found = Problems()
                    app.quietHours = QuietHours.parse(quiet, field: "\(key).quiet_hours", problems: &found)
                    for p in found.items { problem(p.field, p.message) }
                }
                apps[id] = app
            }
            c.appsSection = apps
            let ids = apps.keys.sorted()
            if let name = string(top["default_app"], "default_app") {
                if apps[name] != nil { c.defaultApp = name } else {
                    problem("default_app", "unknown app \(JSONValue.quoted(name)) (expected \(ids.joined(separator: ", ")))")
                }
            } else if ids.count == 1 || apps[AppConfig.implicitID] != nil {
                c.defaultApp = apps[AppConfig.implicitID] != nil ? AppConfig.implicitID : ids[0]
            } else if !apps.isEmpty {
                problem("default_app", "is required with several apps (one of \(ids.joined(separator: ", ")))")
            }
            if let app = apps[c.defaultApp] { c.routes = app.routes }
            // Every app routing APNs to a provider has a topic, and no two share one on a provider.
            var owners: [String: String] = [:]   // "<provider>\u{0}<topic>" → app
            for id in ids {
                guard let provider = apps[id]?.routes[.apns], c.providers[provider]?.kind == .apns else { continue }
                guard let topic = c.apnsTopic(of: id) else {
                    problem("apps.\(id).apns_topic", "is required: app \(id) routes apns to provider \(provider), which has no topic")
                    continue
                }
                let slot = "\(provider)\u{0}\(topic)"
                if let other = owners[slot] {
                    problem("apps.\(id).apns_topic", "\(JSONValue.quoted(topic)) is also app \(other)'s topic on provider \(provider) (one topic, one app)")
                } else {
                    owners[slot] = id
                }
            }
        }
        /// `providers`: each entry by name, its type from `type` or, without one, from its name.
        mutating func providers(_ json: JSONValue?, into c: inout Config) {
            guard let json else { return }
            guard case .object(let entries) = json else { problem("providers", "must be an object, got \(json.typeName)"); return }
            var kinds: [String: ProviderKind] = [:]
            for (name, value) in entries {
                let key = "providers.\(Self.fieldName(name))"
                var kind = ProviderKind(rawValue: name)
                if case .object(let fields) = value, let type = fields.last(where: { $0.0 == "type" })?.1, type != .null {
                    guard let text = type.stringValue, let named = ProviderKind(rawValue: text) else {
                        problem("\(key).type", "must be one of \(ConfigParser.providerNames.joined(separator: ", ")), got \(type.typeName == "string" ? JSONValue.quoted(type.stringValue ?? "") : type.typeName)")
                        continue
                    }
                    if let problem = AppConfig.idProblem(name) {
                        self.problem(key, problem.replacingOccurrences(of: "app id", with: "provider name"))
                        continue
                    }
                    kind = named
                }
                guard let kind else {
                    let hint = Spelling.closest(to: name, among: ConfigParser.providerNames).map { " (did you mean \"\($0)\"?)" } ?? ""
                    problem(key, "unknown key" + hint)
                    continue
                }
                kinds[name] = kind
            }
            // Every provider takes `max_per_second`: its request rate cap across all jobs.
            for (name, value) in entries where kinds[name] != nil {
                guard case .object(let pairs) = value, let limit = pairs.first(where: { $0.0 == "max_per_second" })?.1 else { continue }
                if let rate = rate(limit, "providers.\(name).max_per_second") { c.maxPerSecond[name] = rate }
            }
            // The HTTP providers take `max_connections`: connections per origin at most.
            for (name, value) in entries where kinds[name]?.connects == true {
                guard case .object(let pairs) = value, let limit = pairs.first(where: { $0.0 == "max_connections" })?.1 else { continue }
                if let n = int(limit, "providers.\(name).max_connections", range: 1...64) { c.maxConnectionsByProvider[name] = n }
            }
            // Problems in the order of the types, then named providers by name.
            let order = { (name: String) in ProviderKind.allCases.firstIndex { $0.rawValue == name } ?? ProviderKind.allCases.count }
            for (name, value) in entries.sorted(by: { (order($0.0), $0.0) < (order($1.0), $1.0) }) {
                guard let kind = kinds[name] else { continue }
                if let section = provider(kind, value, "providers.\(name)") {
                    if case .sandbox(let s) = section, name == "sandbox" { c.sandbox = s }
                    c.providers[name] = section
                }
            }
        }

        /// A requests-a-second cap, or nil (with a problem unless it is null).
        mutating func rate(_ limit: JSONValue, _ key: String) -> Double? {
            switch limit {
            case .int(let n) where n >= 1 && n <= 1_000_000: return Double(n)
            case .double(let d) where d >= 0.01 && d <= 1_000_000: return d
            case .null: return nil
            default: problem(key, "must be a number of requests per second from 0.01 to 1000000"); return nil
            }
        }

        /// One provider's section, as its type reads it; `key` is `providers.<name>`.
        mutating func provider(_ kind: ProviderKind, _ value: JSONValue, _ key: String) -> ProviderConfig? {
            let allowed = ConfigKeys.providerCommon(kind) + ConfigKeys.provider(kind)
            switch kind {
            case .apns:
                guard let a = object(value, key, allowed: allowed) else { return nil }
                // With `apps`, each app may carry its own topic: the provider's is then the default.
                let topic = a["topic"] == nil && appsDeclared ? "" : required(a["topic"], "\(key).topic")
                var apns = APNsConfig(teamID: required(a["team_id"], "\(key).team_id"),
                                      keyID: required(a["key_id"], "\(key).key_id"),
                                      keyFile: required(a["key_file"], "\(key).key_file"),
                                      topic: topic)
                if let env = string(a["environment"], "\(key).environment") {
                    if let parsed = APNsEnvironment(name: env) {
                        apns.environment = parsed == .development ? "sandbox" : "production"
                    } else {
                        problem("\(key).environment", "must be \"production\" or \"sandbox\", got \(JSONValue.quoted(env))")
                    }
                }
                apns.endpoint = string(a["endpoint"], "\(key).endpoint")
                apns.productionEndpoint = string(a["production_endpoint"], "\(key).production_endpoint")
                apns.sandboxEndpoint = string(a["sandbox_endpoint"], "\(key).sandbox_endpoint")
                apns.channelsEndpoint = string(a["channels_endpoint"], "\(key).channels_endpoint")
                apns.sandboxChannelsEndpoint = string(a["sandbox_channels_endpoint"], "\(key).sandbox_channels_endpoint")
                return .apns(apns)
            case .fcm:
                guard let f = object(value, key, allowed: allowed) else { return nil }
                return .fcm(FCMConfig(serviceAccountFile: required(f["service_account_file"], "\(key).service_account_file"),
                                      endpoint: string(f["endpoint"], "\(key).endpoint"),
                                      iidEndpoint: string(f["iid_endpoint"], "\(key).iid_endpoint")))
            case .wns:
                guard let w = object(value, key, allowed: allowed) else { return nil }
                var wns = WNSConfig(clientID: required(w["client_id"], "\(key).client_id"),
                                    clientSecret: Secret(required(w["client_secret"], "\(key).client_secret")),
                                    tokenEndpoint: string(w["token_endpoint"], "\(key).token_endpoint"),
                                    scope: string(w["scope"], "\(key).scope"))
                if let hosts = hostList(w["allowed_hosts"], "\(key).allowed_hosts") { wns.allowedHosts = hosts }
                if let auth = string(w["auth"], "\(key).auth") {
                    if let a = WNSConfig.Auth(rawValue: auth) { wns.auth = a } else {
                        problem("\(key).auth", "must be \"package\" or \"entra\", got \(JSONValue.quoted(auth))")
                    }
                }
                wns.tenantID = string(w["tenant_id"], "\(key).tenant_id")
                return .wns(wns)
            case .azure:
                guard let z = object(value, key, allowed: allowed) else { return nil }
                var azure = AzureConfig(connectionString: Secret(required(z["connection_string"], "\(key).connection_string")),
                                        hub: required(z["hub"], "\(key).hub"))
                if let format = string(z["fcm_format"], "\(key).fcm_format") {
                    if format == "fcmV1" || format == "gcm" { azure.fcmFormat = format } else {
                        problem("\(key).fcm_format", "must be \"fcmV1\" or \"gcm\", got \(JSONValue.quoted(format))")
                    }
                }
                azure.apiVersion = string(z["api_version"], "\(key).api_version")
                return .azure(azure)
            case .webpush:
                guard let w = object(value, key, allowed: allowed) else { return nil }
                var webpush = WebPushConfig(vapidPrivateKeyFile: required(w["vapid_private_key_file"], "\(key).vapid_private_key_file"),
                                            subject: required(w["subject"], "\(key).subject"))
                if let hosts = hostList(w["allowed_hosts"], "\(key).allowed_hosts") { webpush.allowedHosts = hosts }
                if let mode = string(w["declarative"], "\(key).declarative") {
                    if let d = WebPushConfig.Declarative(rawValue: mode) { webpush.declarative = d } else {
                        problem("\(key).declarative", "must be \"auto\", \"always\" or \"never\", got \(JSONValue.quoted(mode))")
                    }
                }
                return .webpush(webpush)
            case .sandbox:
                guard let s = object(value, key, allowed: allowed) else { return nil }
                return .sandbox(SandboxConfig(outbox: string(s["outbox"], "\(key).outbox")))
            case .hms:
                guard let h = object(value, key, allowed: allowed) else { return nil }
                return .hms(HMSConfig(appID: required(h["app_id"], "\(key).app_id"),
                                      clientID: required(h["client_id"], "\(key).client_id"),
                                      clientSecret: Secret(required(h["client_secret"], "\(key).client_secret")),
                                      endpoint: string(h["endpoint"], "\(key).endpoint"),
                                      tokenEndpoint: string(h["token_endpoint"], "\(key).token_endpoint")))
            case .adm:
                guard let a = object(value, key, allowed: allowed) else { return nil }
                return .adm(ADMConfig(clientID: required(a["client_id"], "\(key).client_id"),
                                      clientSecret: Secret(required(a["client_secret"], "\(key).client_secret")),
                                      endpoint: string(a["endpoint"], "\(key).endpoint"),
                                      tokenEndpoint: string(a["token_endpoint"], "\(key).token_endpoint")))
            }
        }
    }
}
