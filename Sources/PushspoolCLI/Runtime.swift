import PushspoolKit
import Foundation
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
    /// `requireSecretsIf`: secrets are needed only for a config this says yes to (`serve` with a
    /// hub-routed platform); the file is read once either way.
    init(_ args: Arguments, builtIn: Bool = false, spool spoolPath: String? = nil, requireSecrets: Bool = false,
         requireSecretsIf: ((Config) -> Bool)? = nil,
         createSpool: Bool = false, writing: [Spool.Folder] = []) throws(CLIError) {
        var config = try Self.loadConfig(args, builtIn: builtIn, requireSecrets: requireSecrets)
        if !requireSecrets, !config.unsetSecrets.isEmpty, let needs = requireSecretsIf, needs(config) {
            // Read again only to fail with the loader's own message naming each unset secret.
            config = try Self.loadConfig(args, builtIn: builtIn, requireSecrets: true)
        }
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
        do { return try EngineSetup.openRegistry(config, migrate: migrate, log: log) } catch { throw CLIError(error) }
    }

    /// One provider per distinct name in `routes`, shared by the platforms routed to it.
    /// Every setup problem of every provider is reported before giving up.
    func makeRoutes(log: Log) throws(CLIError) -> [Platform: ProviderState] {
        try Self.makeRoutes(config: config, spool: spool, log: log)
    }

    static func makeRoutes(config: Config, spool: Spool?, log: Log) throws(CLIError) -> [Platform: ProviderState] {
        do { return try EngineSetup.makeRoutes(config: config, spool: spool, log: log) } catch { throw CLIError(error) }
    }
}
