import Foundation
import PushspoolHTTP
import PushspoolCore

/// The pieces a command works with, built from `--config`/`--spool` and the config file.
/// Configuration problems become exit 78 (listing every problem), spool problems 74.
struct Runtime {
    var config: Config
    var spool: Spool

    /// `builtIn`: ignore any config file (the demo must never reach a real service).
    /// `spool` overrides `--spool` and the config (the demo's own spool). `requireSecrets`: only
    /// commands that talk to services (`run`, `config --check`) need `env:` secrets to be set.
    /// `createSpool`: only `init` and the demo create a spool; every other command refuses a
    /// missing one (exit 78), so a mistyped path is an error, not a new spool nobody watches.
    /// `writing`: the spool folders the command writes to (a dispatcher: all), checked up front so
    /// that a permission problem is told as one (exit 77), not as a failure halfway through.
    init(_ args: Arguments, builtIn: Bool = false, spool spoolPath: String? = nil, requireSecrets: Bool = false,
         createSpool: Bool = false, writing: [Spool.Folder] = []) throws(CLIError) {
        var config = try Self.loadConfig(args, builtIn: builtIn, requireSecrets: requireSecrets)
        if let spoolPath {
            config.spool = spoolPath
            config.registry = (spoolPath as NSString).appendingPathComponent("registry.sqlite")
        }
        do {
            spool = try Spool(root: URL(fileURLWithPath: config.spool), create: createSpool)
            try spool.checkWritable(writing)
        } catch {
            if error.kind == .denied { throw CLIError(.noPermission, error.description) }
            if error.kind == .missing {
                throw CLIError(.config, "no spool at \(config.spool) (create it with `pushspool init --spool \(config.spool)`, or give the right --spool/--config)")
            }
            throw CLIError(error.kind == .refused ? .config : .ioError, error.description)
        }
        self.config = config
    }

    /// The effective config with the spool and registry paths resolved; touches no spool.
    static func loadConfig(_ args: Arguments, builtIn: Bool = false, requireSecrets: Bool = false) throws(CLIError) -> Config {
        var config = Config()
        if !builtIn {
            do {
                config = try ConfigLoader.load(explicit: args.value("config"), requireSecrets: requireSecrets)
            } catch {
                throw CLIError(.config, "configuration problems:\n" + error.problems.map { "  \($0)" }.joined(separator: "\n"))
            }
        }
        let cwd = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        // --spool is relative to the working directory; config paths to the config's folder.
        let spoolURL = args.value("spool").map { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : cwd.appendingPathComponent($0) }
            ?? config.resolve(config.spool)
        config.spool = spoolURL.standardizedFileURL.path
        if config.registry == nil { config.registry = spoolURL.appendingPathComponent("registry.sqlite").path }
        // From here on, every log line and error message masks this config's secrets.
        Redaction.register(Redaction.secrets(in: config))
        return config
    }

    /// The registry `registry` names: a PostgreSQL URI (several hosts) or a SQLite file.
    /// `migrate: false` only checks the schema (a newer one is refused either way).
    func openRegistry(migrate: Bool = true, log: Log? = nil) throws(CLIError) -> any RegistryDatabase {
        try Self.openRegistry(config, migrate: migrate, log: log)
    }

    static func openRegistry(_ config: Config, migrate: Bool = true, log: Log? = nil) throws(CLIError) -> any RegistryDatabase {
        let value = config.registryPath
        if let unset = config.unsetSecrets["registry"] {
            throw CLIError(.config, "registry: \(unset) (it names the registry every command needs)")
        }
        do {
            if RegistryLocation.isPostgres(value) {
                return try PostgresRegistry(uri: value, migrate: migrate, log: log)
            }
            return try Registry(path: config.resolve(value).path)
        } catch {
            throw CLIError(.ioError, "registry \(RegistryLocation.redacted(value)): \(RegistryError.detail(error))")
        }
    }

    /// Where short-lived credentials are shared: the PostgreSQL registry (every host), else the
    /// spool's `.state/` (every process on it); with no spool, nowhere (memory only).
    static func credentialStore(config: Config, spool: Spool?) -> (any CredentialStore)? {
        guard let spool else { return nil }
        if RegistryLocation.isPostgres(config.registryPath) { return PostgresCredentialStore(uri: config.registryPath) }
        return FileCredentialStore(directory: spool.stateDirectory)
    }

    /// One provider per distinct name in `routes`, shared by the platforms routed to it.
    /// Every setup problem of every provider is reported before giving up.
    func makeRoutes(log: Log) throws(CLIError) -> [Platform: ProviderState] {
        try Self.makeRoutes(config: config, spool: spool, log: log)
    }

    /// With no spool (`config --check`), credentials are cached in memory only and nothing is
    /// created on disk.
    static func makeRoutes(config: Config, spool: Spool?, log: Log) throws(CLIError) -> [Platform: ProviderState] {
        let (routes, problems) = routesAndProblems(config: config, spool: spool, log: log)
        if !problems.isEmpty {
            for state in routes.values { state.provider.shutdown() }
            throw CLIError(.config, "configuration problems:\n" + problems.map { "  \($0)" }.joined(separator: "\n"))
        }
        return routes
    }

    /// The providers that could be set up, and every problem of the others (`config --check`
    /// lists them with the config's other problems).
    static func routesAndProblems(config: Config, spool: Spool?, log: Log) -> (routes: [Platform: ProviderState], problems: [String]) {
        var problems: [String] = []
        var caPEM: String?
        if let caFile = config.tls.caFile {
            do {
                caPEM = String(decoding: try FileIO.readAll(config.resolve(caFile)), as: UTF8.self)
                if !(caPEM ?? "").contains("-----BEGIN CERTIFICATE-----") { problems.append("tls.ca_file: \(caFile) holds no PEM certificate") }
            } catch {
                problems.append("tls.ca_file: cannot read \(caFile): \(error)")
            }
        }
        let extraCA = caPEM
        let context = ProviderContext(
            config: config,
            credentials: CredentialCache(store: credentialStore(config: config, spool: spool)),
            log: log,
            makeHTTPClient: { options in
                var options = options
                if options.extraCAPEM == nil { options.extraCAPEM = extraCA }
                return HTTPClients.make(options)
            })
        var byName: [String: ProviderState] = [:]
        var routes: [Platform: ProviderState] = [:]
        var broken: Set<String> = []     // each provider's problems are reported once, whatever routes to it
        for platform in Platform.allCases {
            let name = config.routes[platform] ?? "sandbox"
            if broken.contains(name) { continue }
            if byName[name] == nil {
                do {
                    let provider = try ProviderFactory.make(name: name, context: context)
                    byName[name] = ProviderState(provider: provider, maxPerSecond: config.maxPerSecond[name], onPause: { [spool] reason in
                        if let spool { PauseRecord.write(provider: name, reason: reason, in: spool) }
                    })
                } catch let error as ProviderSetupError {
                    problems += error.problems
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
        return (routes, problems)
    }
}
