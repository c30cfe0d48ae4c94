import PushspoolKit
import Foundation

/// `pushspool registry migrate`: brings the registry's schema to this binary's version, saying
/// from which. Every command does this on opening the registry; the explicit command is for a
/// shared PostgreSQL registry, run once from one host when pushspool is upgraded (before the
/// dispatchers restart), and it refuses a schema newer than this binary's as `run` does.
enum RegistryMigrateCommand {
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard args.positionals == ["migrate"] else {
            throw CLIError(.usage, "registry migrate: unexpected argument \"\(args.positionals.last ?? "")\" (registry migrate takes only options)")
        }
        let config = try Runtime.loadConfig(args)
        let value = config.registryPath
        if RegistryLocation.isPostgres(value) {
            let shown = RegistryLocation.redacted(value)
            do {
                let (from, to) = try PostgresRegistry.migrate(uri: value, defaults: RegistryDefaults(config))
                print(from == to ? "registry \(shown): schema version \(to), nothing to migrate"
                                 : "registry \(shown): schema migrated from version \(from) to \(to)")
                return .ok
            } catch let error where error.kind != .unavailable {
                throw CLIError(.config, "registry migrate: \(shown): \(RegistryError.detail(error))")
            } catch {
                throw CLIError(.ioError, "registry migrate: \(shown): \(RegistryError.detail(error))")
            }
        }
        // A SQLite registry lives with its spool: as every other command, refuse a missing one
        // rather than create a registry nobody's spool uses.
        _ = try Runtime(args)
        let path = config.resolve(value).path
        do {
            let (from, to) = try SQLiteRegistry.migrate(path: path, defaults: RegistryDefaults(config))
            print(from == to ? "registry \(path): schema version \(to), nothing to migrate"
                             : "registry \(path): schema migrated from version \(from) to \(to)")
            return .ok
        } catch let error as RegistryError where error.isNewerSchema {
            throw CLIError(.config, "registry migrate: \(path): \(RegistryError.detail(error))")
        } catch {
            throw CLIError(.ioError, "registry migrate: \(path): \(RegistryError.detail(error))")
        }
    }
}
