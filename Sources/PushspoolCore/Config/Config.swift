import Foundation

/// The effective configuration: typed sections with their defaults in one place.
/// `ConfigParser` builds it from `pushspool.json`'s bytes (`ConfigLoader` in PushspoolKit reads
/// the file); with no file: sandbox only.
public struct Config: Sendable {
    public var spool: String = "jobs"
    /// Default: `<spool>/registry.sqlite`.
    public var registry: String?
    /// `registry_connections`: the connections one process opens to a PostgreSQL registry at
    /// most, all its parts together (the registry, the queue and its `LISTEN`, the shared caps,
    /// pauses and credentials: one pool). Ignored with SQLite. The default is about what the
    /// parts' separate pools of earlier releases held at once at most: with fewer, a `run` with
    /// the default `queue.max_chunks` (4) on a loaded machine waited for connections long enough
    /// to miss lease renewals (chunks then go to another host and are partly sent twice).
    public var registryConnections: Int = 16
    /// `env:` values whose variable is not set, by key; only when parsed with
    /// `requireSecrets: false` (otherwise each is a problem).
    public var unsetSecrets: [String: UnsetSecret] = [:]
    public var concurrency: Int = 256
    /// `max_jobs`: jobs one dispatcher runs at once. The rest wait in `incoming/` (where another
    /// dispatcher sharing the spool can take them), so a small campaign is not queued behind a
    /// large one, while `concurrency` still bounds requests in flight across all of them.
    public var maxJobs: Int = 4
    public var retry = RetryPolicy()
    /// Platform → provider name (`apns`, `fcm`, `wns`, `azure`, `sandbox`).
    public var routes: [Platform: String] = [.apns: "sandbox", .fcm: "sandbox", .wns: "sandbox", .web: "sandbox", .hms: "sandbox", .adm: "sandbox"]
    /// `providers`, by name (§ Several apps: a name with a `type`, or the type itself).
    public var providers: [String: ProviderConfig] = [:]
    /// `apps`, as the file declares them; nil: no `apps` (one app, `default`).
    public var appsSection: [String: AppConfig]?
    /// `default_app`: the app of jobs, devices and requests that name none.
    public var defaultApp: String = AppConfig.implicitID
    public var sandbox = SandboxConfig()
    public var tls = TLSConfig()
    /// `providers.<name>.max_per_second`: each provider's request rate cap, by provider name.
    public var maxPerSecond: [String: Double] = [:]
    /// `providers.<name>.max_connections`: connections per origin an HTTP provider may open, by
    /// provider name; `maxConnections(for:)` gives the default for the rest.
    public var maxConnectionsByProvider: [String: Int] = [:]
    public var metrics = MetricsConfig()
    /// `http`: the front door of `pushspool serve`; nil when the config has no `http` section
    /// (then `serve` uses the defaults and, with no users or tokens file, only `/healthz` answers).
    public var http: HTTPConfig?
    /// `queue`: how hosts on one PostgreSQL registry share send jobs (README "Several hosts").
    public var queue = QueueConfig()
    /// `receipts`: how long the events apps report are kept.
    public var receipts = ReceiptsConfig()
    /// `webhooks`: where signed events about jobs and devices are posted (README "Webhooks").
    public var webhooks: [WebhookConfig] = []
    /// `local_time_grace_minutes`: a `local_time` wave found late by less than this (the
    /// dispatcher was down at its time) is sent at once; later, it is skipped.
    public var localTimeGraceMinutes: Int = 60
    /// Where the file was read from (relative paths in it resolve against its folder).
    public var baseDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)

    public init() {}

    /// Every app: `apps`, or the one app `default` with the top-level `routes` and the APNs
    /// provider's `topic`.
    public var apps: [String: AppConfig] {
        appsSection ?? [defaultApp: AppConfig(routes: routes)]
    }

    /// The providers named after their type (`providers.apns`, …): the sections of a config
    /// without named providers.
    public var apns: APNsConfig? {
        get { providers["apns"]?.apns }
        set { providers["apns"] = newValue.map(ProviderConfig.apns) }
    }
    public var fcm: FCMConfig? {
        get { providers["fcm"]?.fcm }
        set { providers["fcm"] = newValue.map(ProviderConfig.fcm) }
    }
    public var wns: WNSConfig? {
        get { providers["wns"]?.wns }
        set { providers["wns"] = newValue.map(ProviderConfig.wns) }
    }
    public var azure: AzureConfig? {
        get { providers["azure"]?.azure }
        set { providers["azure"] = newValue.map(ProviderConfig.azure) }
    }
    public var webpush: WebPushConfig? {
        get { providers["webpush"]?.webpush }
        set { providers["webpush"] = newValue.map(ProviderConfig.webpush) }
    }
    public var hms: HMSConfig? {
        get { providers["hms"]?.hms }
        set { providers["hms"] = newValue.map(ProviderConfig.hms) }
    }
    public var adm: ADMConfig? {
        get { providers["adm"]?.adm }
        set { providers["adm"] = newValue.map(ProviderConfig.adm) }
    }

    /// Connections per origin when `max_connections` is not set: at APNs's 1,000 streams per
    /// connection, room for `concurrency` up to 8,000 on one origin. Connections open only as
    /// demand needs them, so a smaller campaign still uses one.
    public static let defaultMaxConnections = 8

    /// The providers that open HTTP connections, so the ones that take `max_connections`.
    public static let connectingProviders = ProviderKind.allCases.filter(\.connects).map(\.rawValue)

    public func maxConnections(for provider: String) -> Int {
        maxConnectionsByProvider[provider] ?? Self.defaultMaxConnections
    }

    public var registryPath: String { registry ?? (spool as NSString).appendingPathComponent("registry.sqlite") }

    /// The sandbox's outbox: `providers.sandbox.outbox`, else `<spool>/outbox`.
    public var outboxPath: String { sandbox.outbox ?? (spool as NSString).appendingPathComponent("outbox") }

    /// A path from the config, resolved against the config file's folder.
    public func resolve(_ path: String) -> URL {
        path.hasPrefix("/") ? URL(fileURLWithPath: path) : baseDirectory.appendingPathComponent(path)
    }
}

public struct APNsConfig: Sendable {
    public var teamID: String
    public var keyID: String
    public var keyFile: String
    public var topic: String
    /// `production` or `sandbox` (development builds): the environment of devices that name none.
    public var environment: String = "production"
    /// Overrides the Apple host of the provider's own `environment` (staging, tests), e.g.
    /// `https://127.0.0.1:8443`.
    public var endpoint: String?
    /// `production_endpoint`, `sandbox_endpoint`: each environment's host, over `endpoint`.
    public var productionEndpoint: String?
    public var sandboxEndpoint: String?
    /// `channels_endpoint`, `sandbox_channels_endpoint`: the broadcast channel management hosts
    /// (`api-manage-broadcast[.sandbox].push.apple.com`), overridden (staging, tests).
    public var channelsEndpoint: String?
    public var sandboxChannelsEndpoint: String?
    /// The topic of each app routed to this provider (the factory fills it in from `apps`);
    /// empty: `topic` for every device.
    public var topics: [String: String] = [:]

    public init(teamID: String, keyID: String, keyFile: String, topic: String, environment: String = "production",
                endpoint: String? = nil) {
        self.teamID = teamID
        self.keyID = keyID
        self.keyFile = keyFile
        self.topic = topic
        self.environment = environment
        self.endpoint = endpoint
    }

    public var baseURL: String { baseURL(for: apnsEnvironment) }

    public var apnsEnvironment: APNsEnvironment { environment == "sandbox" ? .development : .production }

    /// The channel management host of `env` (iOS 18 broadcast channels).
    public func channelsURL(for env: APNsEnvironment) -> String {
        switch env {
        case .production: channelsEndpoint ?? "https://api-manage-broadcast.push.apple.com"
        case .development: sandboxChannelsEndpoint ?? "https://api-manage-broadcast.sandbox.push.apple.com"
        }
    }

    /// The host devices of `env` are sent to: its own `*_endpoint`, else `endpoint` for the
    /// provider's own environment, else Apple's.
    public func baseURL(for env: APNsEnvironment) -> String {
        switch env {
        case .production:
            productionEndpoint ?? (apnsEnvironment == .production ? endpoint : nil) ?? "https://api.push.apple.com"
        case .development:
            sandboxEndpoint ?? (apnsEnvironment == .development ? endpoint : nil) ?? "https://api.sandbox.push.apple.com"
        }
    }
}

public struct FCMConfig: Sendable {
    public var serviceAccountFile: String
    /// Overrides `https://fcm.googleapis.com`. The token endpoint is the account's `token_uri`.
    public var endpoint: String?
    /// `iid_endpoint`: overrides `https://iid.googleapis.com`, the Instance ID service that
    /// (un)subscribes tokens to topics (`pushspool fcm topics`).
    public var iidEndpoint: String?

    public init(serviceAccountFile: String, endpoint: String? = nil, iidEndpoint: String? = nil) {
        self.serviceAccountFile = serviceAccountFile
        self.endpoint = endpoint
        self.iidEndpoint = iidEndpoint
    }
}

public struct WNSConfig: Sendable {
    /// How pushspool authenticates to WNS: `package` (a Store app's package SID and secret at
    /// login.live.com, the default) or `entra` (a Windows App SDK app's Microsoft Entra app
    /// registration: `tenant_id`, the application's client id and a client secret).
    public enum Auth: String, Sendable { case package, entra }
    public var auth: Auth = .package
    /// The Entra tenant (`auth: "entra"` only).
    public var tenantID: String?
    public var clientID: String
    public var clientSecret: Secret
    /// Default `https://login.live.com/accesstoken.srf`; with Entra,
    /// `https://login.microsoftonline.com/<tenant_id>/oauth2/v2.0/token`.
    public var tokenEndpoint: String?
    /// Scope for the token request: `notify.windows.com` (classic) or `https://wns.windows.com/.default`.
    public var scope: String?
    /// Channel URIs are used only over https with a host ending in one of these.
    public var allowedHosts: [String] = ["notify.windows.com"]

    public init(clientID: String, clientSecret: Secret, tokenEndpoint: String? = nil, scope: String? = nil,
                allowedHosts: [String] = ["notify.windows.com"]) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.tokenEndpoint = tokenEndpoint
        self.scope = scope
        self.allowedHosts = allowedHosts
    }
}

public struct WebPushConfig: Sendable {
    /// The VAPID private key (EC P-256, PEM), as `pushspool webpush keygen` writes it.
    public var vapidPrivateKeyFile: String
    /// The VAPID `sub` claim: a `mailto:` or `https:` contact for the push services.
    public var subject: String
    /// Endpoints are used only over https on a host equal to or ending in "." + one of these.
    public var allowedHosts: [String] = WebPushConfig.defaultAllowedHosts
    /// Which subscriptions get a job with a `url` in WebKit's declarative format
    /// (`{"web_push":8030,…}`): `auto` Apple's push service (`*.push.apple.com`, Safari 18.4+),
    /// `always` every subscription, `never` none.
    public enum Declarative: String, Sendable { case auto, always, never }
    public var declarative: Declarative = .auto

    public init(vapidPrivateKeyFile: String, subject: String, allowedHosts: [String] = WebPushConfig.defaultAllowedHosts) {
        self.vapidPrivateKeyFile = vapidPrivateKeyFile
        self.subject = subject
        self.allowedHosts = allowedHosts
    }

    /// The push services of Chrome/Edge (FCM), Firefox, Windows and Safari.
    public static let defaultAllowedHosts = ["fcm.googleapis.com", "updates.push.services.mozilla.com",
                                             "notify.windows.com", "push.apple.com"]
}

public struct AzureConfig: Sendable {
    public var connectionString: Secret
    public var hub: String
    /// `ServiceBusNotification-Format` for the fcm platform: `fcmV1` (default) or legacy `gcm`.
    public var fcmFormat: String = "fcmV1"
    public var apiVersion: String?

    public init(connectionString: Secret, hub: String, fcmFormat: String = "fcmV1", apiVersion: String? = nil) {
        self.connectionString = connectionString
        self.hub = hub
        self.fcmFormat = fcmFormat
        self.apiVersion = apiVersion
    }
}

public struct SandboxConfig: Sendable {
    /// Default `<spool>/outbox`.
    public var outbox: String?

    public init(outbox: String? = nil) { self.outbox = outbox }
}

public struct TLSConfig: Sendable {
    /// An extra trusted CA (PEM) added to the system roots; verification is never turned off.
    public var caFile: String?

    public init(caFile: String? = nil) { self.caFile = caFile }
}

/// A secret value (client secret, connection string): printed as `Redaction.mask`, never logged.
public struct Secret: Sendable, CustomStringConvertible, Equatable {
    public let value: String
    public init(_ value: String) { self.value = value }
    public var description: String { Redaction.mask }
}

/// `metrics`: the Prometheus textfile (node_exporter's textfile collector reads it).
public struct MetricsConfig: Sendable {
    /// Where to write it; nil: no metrics file. The first `run` on it writes this very file;
    /// every other process sharing it writes a sibling of its own (`MetricsTextfile`).
    public var textfile: String?
    public var intervalSeconds: Int = 5
    /// The `spool_instance` label of every sample (default: `<host>:<spool path>`).
    public var instance: String?

    public init(textfile: String? = nil, intervalSeconds: Int = 5) {
        self.textfile = textfile
        self.intervalSeconds = intervalSeconds
    }
}

/// `http`: `pushspool serve`, the HTTP front door (README "HTTP front door").
public struct HTTPConfig: Sendable {
    /// `host:port`, `[v6]:port` or `:port` (every address); `ListenAddress(listen)` takes it
    /// apart (the parser has checked that it can).
    public var listen: String = "127.0.0.1:8080"
    /// PEM certificate chain and key: TLS when both are set.
    public var tlsCertFile: String?
    public var tlsKeyFile: String?
    /// An htpasswd file (`htpasswd -B`): app users, HTTP Basic.
    public var usersFile: String?
    /// `<name> <sha256-hex of the token>` per line: services, `Authorization: Bearer`.
    public var tokensFile: String?
    /// An htpasswd file (`htpasswd -B`): operators, who log in to the dashboard at `/ui/` with a
    /// form. Nil: no dashboard (every `/ui/` route answers `404`).
    public var operatorsFile: String?
    /// Whether app users may send (`POST /api/notifications`).
    public var usersMaySend: Bool = true
    /// Tags an app user may set besides its own `username:<user>`: those starting with one of these.
    public var clientTagPrefixes: [String] = []
    /// Requests a minute per user or token; past it `429` with `Retry-After`.
    public var rateLimitPerMinute: Int = 600
    /// Idle or slow clients are cut off after this long.
    public var timeoutSeconds: Int = 30
    /// Open connections at most; further ones are refused until some close.
    public var maxConnections: Int = 4096
    /// Open connections from one client address at most (`0`: no limit, for a server only a
    /// reverse proxy connects to).
    public var maxConnectionsPerAddress: Int = 64
    /// Reverse proxies whose `X-Forwarded-For` names the client (addresses or CIDR blocks);
    /// from anyone else the header is ignored.
    public var trustedProxies: [AddressRange] = []
    /// Whether an app user may take over a device registered to another user by registering
    /// its handle (the tutorial's behaviour: whoever holds the push token owns the device).
    public var handlesMoveBetweenUsers: Bool = true
    /// A request not answered within this long gets `503` with `Retry-After` (its connection is
    /// never left waiting on a slow dependency).
    public var requestTimeoutSeconds: Int = 10

    public init() {}
}

/// `queue`: the job queue in a PostgreSQL registry, shared by every host on it (README
/// "Several hosts"). Ignored with a SQLite registry.
public struct QueueConfig: Sendable, Equatable {
    /// `enabled`: false keeps each host's send jobs on that host, as with SQLite.
    public var enabled = true
    /// `chunk_size`: the most devices in one chunk (one host's share, claimed at once).
    public var chunkSize = 10_000
    /// `lease_seconds`: how long a chunk stays with a host that stopped renewing its lease.
    public var leaseSeconds = 30
    /// `max_chunks`: the most chunks one host sends at once.
    public var maxChunks = 4
    /// `durable_outcomes`: each batch of recorded outcomes waits until the database flushed it to
    /// disk. Off (the default), batches are committed without that wait: a database crash (not a
    /// restart) can lose the last fraction of a second of them, whose targets are then sent again
    /// (duplicates, never losses); a chunk's completion is always flushed, with its lines.
    public var durableOutcomes = false
    /// `keep_days`: how long the queue keeps an ended job's rows (its chunks and outcome lines,
    /// for `results` on any host) before the hosts delete them; 0 keeps them for good. The
    /// origin's result log is not affected.
    public var keepDays = 30

    public init() {}
}

/// `receipts` (§ The app talks back): the events apps report of tracked notifications.
public struct ReceiptsConfig: Sendable, Equatable {
    /// `keep_days`: a job's events are deleted this many days after the job ended.
    public var keepDays = 30

    public init() {}
}
