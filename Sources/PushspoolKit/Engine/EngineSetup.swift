import Foundation
import PushspoolCore
import PushspoolHTTP

/// Why the engine, or one of its parts, could not be built from a config: a configuration
/// problem (every one listed, each starting with its key) or an I/O one (the registry cannot be
/// opened). The CLI turns the first into exit 78 and the second into exit 74.
public struct EngineSetupError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable { case config, io }
    public var kind: Kind
    /// One line each; a config error may hold several.
    public var problems: [String]

    public init(_ kind: Kind, _ problems: [String]) {
        self.kind = kind
        self.problems = problems
    }

    public var description: String {
        kind == .config ? "configuration problems:\n" + problems.map { "  \($0)" }.joined(separator: "\n")
            : problems.joined(separator: "\n")
    }
}

/// The parts of the engine that come from the config alone, each usable on its own: the CLI's
/// other commands (`devices`, `config --check`, `hub`) open a registry or set up providers
/// without a dispatcher.
public enum EngineSetup {
    /// The registry `registry` names: a PostgreSQL URI (several hosts) or a SQLite file.
    /// `migrate: false` only checks the schema (a newer one is refused either way).
    public static func openRegistry(_ config: Config, migrate: Bool = true, log: Log? = nil) throws(EngineSetupError) -> any RegistryDatabase {
        let value = config.registryPath
        if let unset = config.unsetSecrets["registry"] {
            throw EngineSetupError(.config, ["registry: \(unset) (it names the registry every command needs)"])
        }
        let defaults = RegistryDefaults(config)
        do {
            if RegistryLocation.isPostgres(value) {
                return try PostgresRegistry(uri: value, maxConnections: config.registryConnections, migrate: migrate, log: log,
                                            defaults: defaults)
            }
            return try SQLiteRegistry(path: config.resolve(value).path, defaults: defaults)
        } catch let error as RegistryError where error.isNewerSchema {
            // Upgrading pushspool is the fix: a configuration problem (exit 78), nothing written.
            throw EngineSetupError(.config, ["registry \(RegistryLocation.redacted(value)): \(RegistryError.detail(error))"])
        } catch {
            throw EngineSetupError(.io, ["registry \(RegistryLocation.redacted(value)): \(RegistryError.detail(error))"])
        }
    }

    /// The process's connections to a PostgreSQL registry: the open registry's pool when there
    /// is one (`run`, `serve`), else one pool of `registry_connections` for what this call
    /// builds (a command that opens no registry); nil with SQLite or an unset `env:` registry.
    static func pool(config: Config, registry: (any DeviceRegistry)?) -> PostgresPool? {
        if let shared = registry?.shared { return shared.pool }
        guard RegistryLocation.isPostgres(config.registryPath), config.unsetSecrets["registry"] == nil else { return nil }
        return PostgresPool(uri: config.registryPath, maxConnections: config.registryConnections)
    }

    /// Where short-lived credentials are shared: the PostgreSQL registry (every host), else the
    /// spool's `.state/` (every process on it); with no spool, nowhere (memory only).
    /// `registry`: the one the process holds open, whose pool is borrowed.
    public static func credentialStore(config: Config, spool: Spool?, registry: (any DeviceRegistry)? = nil) -> (any CredentialStore)? {
        guard let spool else { return nil }
        if RegistryLocation.isPostgres(config.registryPath) {
            return pool(config: config, registry: registry).map(PostgresCredentialStore.init(pool:))
        }
        return FileCredentialStore(directory: spool.stateDirectory)
    }

    /// The job queue shared by every host on a PostgreSQL registry (README "Several hosts"), for
    /// the commands that read or steer it from any host; nil with SQLite or `queue.enabled` false.
    /// On the pool of `registry` when given (`serve`), else on `connections` of its own.
    public static func sharedQueue(config: Config, registry: (any DeviceRegistry)? = nil, connections: Int = 1) -> PostgresJobQueue? {
        guard config.queue.enabled, RegistryLocation.isPostgres(config.registryPath), config.unsetSecrets["registry"] == nil else { return nil }
        if let shared = registry?.shared { return PostgresJobQueue(pool: shared.pool, host: SharedQueue.hostName()) }
        return PostgresJobQueue(uri: config.registryPath, host: SharedQueue.hostName(), maxConnections: connections)
    }

    /// Where `max_per_second` caps are shared with the other hosts: the PostgreSQL registry,
    /// when a cap is set and there is a spool (a dispatcher, not `config --check`).
    static func rateGrants(config: Config, spool: Spool?, pool: PostgresPool?) -> (any RateGrantSource)? {
        guard spool != nil, let pool,
              !config.maxPerSecond.isEmpty || config.apps.values.contains(where: { $0.maxPerSecond != nil }) else { return nil }
        return SharedRateGrants(pool: pool)
    }

    /// One provider per distinct name in `routes`, shared by the platforms routed to it. Every
    /// setup problem of every provider is reported before giving up. With no spool (`config
    /// --check`), credentials are cached in memory only and nothing is created on disk.
    /// The default app's routes; `makeApps` gives every app's.
    public static func makeRoutes(config: Config, spool: Spool?, log: Log) throws(EngineSetupError) -> [Platform: ProviderState] {
        try makeApps(config: config, spool: spool, log: log).routes
    }

    /// Every app's routes, one provider per distinct name across all apps. `registry`: the one
    /// the process holds open, whose connections the shared caps, pauses and credentials borrow.
    /// `clock`: the engine's (`Engine.Hooks.clock`), which the providers' quiet times and pause
    /// records are read from.
    public static func makeApps(config: Config, spool: Spool?, log: Log, registry: (any DeviceRegistry)? = nil,
                                clock: EngineClock = .system) throws(EngineSetupError) -> AppRoutes {
        let (apps, problems) = appsAndProblems(config: config, spool: spool, log: log, registry: registry, clock: clock)
        if !problems.isEmpty {
            apps.shutdown()
            throw EngineSetupError(.config, problems)
        }
        return apps
    }

    /// The default app's providers that could be set up, and every problem of every app's
    /// providers (`config --check` lists them with the config's other problems).
    public static func routesAndProblems(config: Config, spool: Spool?, log: Log) -> (routes: [Platform: ProviderState], problems: [String]) {
        let (apps, problems) = appsAndProblems(config: config, spool: spool, log: log)
        let routes = apps.routes
        let kept = Set(routes.values.map(ObjectIdentifier.init))
        for state in apps.providers where !kept.contains(ObjectIdentifier(state)) { state.provider.shutdown() }
        return (routes, problems)
    }

    /// `tls.ca_file`'s certificates, which every HTTP client of the process (providers, webhooks)
    /// trusts besides the system's roots (`TrustStore`), read and checked here for all of them;
    /// or why it cannot be used (one line naming the key). Nil, nil: no `tls.ca_file`.
    static func extraCA(_ config: Config) -> (pem: String?, problem: String?) {
        guard let caFile = config.tls.caFile else { return (nil, nil) }
        do {
            let pem = String(decoding: try FileIO.readAll(config.resolve(caFile)), as: UTF8.self)
            return pem.contains("-----BEGIN CERTIFICATE-----") ? (pem, nil) : (nil, "tls.ca_file: \(caFile) holds no PEM certificate")
        } catch {
            return (nil, "tls.ca_file: cannot read \(caFile): \(error)")
        }
    }

    /// What providers are built with: the config, the shared credential cache (on `pool`, the
    /// process's PostgreSQL connections, when given), and HTTP clients that trust `tls.ca_file`
    /// too (with its problem, if it cannot be read).
    public static func providerContext(config: Config, spool: Spool?, log: Log,
                                       pool: PostgresPool? = nil) -> (context: ProviderContext, problems: [String]) {
        // A CA file with a problem is told once, here: the providers are not also built with it.
        let (extraCA, problem) = Self.extraCA(config)
        let problems = problem.map { [$0] } ?? []
        // On the pool given (the process's), else on one of its own.
        let store: (any CredentialStore)? = spool == nil ? nil
            : pool.map { PostgresCredentialStore(pool: $0) } ?? credentialStore(config: config, spool: spool)
        let context = ProviderContext(
            config: config,
            credentials: CredentialCache(store: store),
            log: log,
            makeHTTPClient: { options in
                var options = options
                if options.extraCAPEM == nil { options.extraCAPEM = extraCA }
                do {
                    return try HTTPClients.make(options)
                } catch {
                    // The one setting a transport is built from that a user writes is the CA
                    // file; any other failure (no poll thread) is the provider's.
                    guard let extraCA, options.extraCAPEM == extraCA else { throw error }
                    throw ProviderSetupError(["tls.ca_file: \(config.tls.caFile ?? "") \(error)"])
                }
            })
        return (context, problems)
    }

    /// Every app's providers that could be set up, and every problem of the others. With
    /// `apps` in the config, each problem also names the apps whose routes use the provider.
    public static func appsAndProblems(config: Config, spool: Spool?, log: Log, registry: (any DeviceRegistry)? = nil,
                                       clock: EngineClock = .system) -> (apps: AppRoutes, problems: [String]) {
        // One pool for the credentials, caps and pauses: the open registry's, else one made here.
        let pool = spool == nil ? nil : pool(config: config, registry: registry)
        let (context, found) = providerContext(config: config, spool: spool, log: log, pool: pool)
        var problems = found
        var byName: [String: ProviderState] = [:]
        var broken: Set<String> = []     // each provider's problems are reported once, whatever routes to it
        var apps: [String: AppRoutes.App] = [:]
        let grants = rateGrants(config: config, spool: spool, pool: pool)
        // A provider's pause and quiet time reach every host on a PostgreSQL registry.
        let sharing: (any ProviderPauseSharing)? = pool.map(SharedProviderPauses.init(pool:))
        for (app, appConfig) in config.apps.sorted(by: { $0.key < $1.key }) {
            var routes: [Platform: ProviderState] = [:]
            for platform in Platform.allCases {
                let name = appConfig.routes[platform] ?? "sandbox"
                if broken.contains(name) { continue }
                if byName[name] == nil {
                    do {
                        // Its clients noted, so that its connections are counted (`status`, `/metrics`).
                        let clients = ProviderClients()
                        let provider = try ProviderFactory.make(name: name, context: clients.noting(context))
                        byName[name] = ProviderState(provider: provider, name: name, maxPerSecond: config.maxPerSecond[name],
                                                      rateGrants: grants, sharing: sharing, log: log,
                                                      connections: clients.count, clock: clock, onPause: { [spool] reason in
                            if let spool { PauseRecord.write(provider: name, reason: reason, in: spool, clock: clock) }
                        })
                    } catch let error as ProviderSetupError {
                        // Shared settings (the CA file) are one problem, however many providers use them.
                        let users = config.appsSection == nil ? "" : " (used by app \(config.apps(routingTo: name).joined(separator: ", ")))"
                        let named = error.problems.map { $0.hasPrefix("providers.") ? $0 + users : $0 }
                        problems += named.filter { !problems.contains($0) }
                        broken.insert(name)
                        continue
                    } catch {
                        problems.append("providers.\(name): \(error)")
                        broken.insert(name)
                        continue
                    }
                }
                routes[platform] = byName[name]
            }
            let limiter = appConfig.maxPerSecond.map { rate in
                RateLimiter(perSecond: rate, shared: grants.map { .init(source: $0, bucket: "app:" + app, log: log) }, clock: clock.uptime)
            }
            apps[app] = AppRoutes.App(routes: routes, limiter: limiter,
                                      frequencyCap: appConfig.frequencyCap)
        }
        return (AppRoutes(defaultApp: config.defaultApp, apps: apps), problems)
    }
}
