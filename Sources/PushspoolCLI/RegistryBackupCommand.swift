import PushspoolKit
import Foundation

/// `pushspool registry backup FILE`: a consistent copy of a SQLite registry while the other
/// commands keep using it (`SQLiteBackup`). A PostgreSQL registry is the database's to back up:
/// the command says to use pg_dump, in one line.
enum RegistryBackupCommand {
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard args.positionals.count == 2 else {
            throw CLIError(.usage, "registry backup: give the FILE to write (pushspool registry backup FILE)")
        }
        let file = args.positionals[1]
        let config = try Runtime.loadConfig(args)
        let value = config.registryPath
        if RegistryLocation.isPostgres(value) {
            throw CLIError(.usage, "registry backup: \(RegistryLocation.redacted(value)) is a PostgreSQL registry: back it up with pg_dump (pg_dump -Fc -f \(file) '<registry URI>'), restore with pg_restore")
        }
        // A SQLite registry lives with its spool: refuse a spool that does not exist, as every command does.
        _ = try Runtime(args)
        let path = config.resolve(value).path
        let destination = file.hasPrefix("/") ? file : FileManager.default.currentDirectoryPath + "/" + file
        do {
            let report = try SQLiteBackup.backup(registry: path, to: destination)
            print("registry \(path): backed up to \(file): \(report.devices) devices, \(report.pages) pages (\(report.bytes) bytes), integrity ok")
            return .ok
        } catch {
            throw CLIError(.ioError, "registry backup: \(RegistryError.detail(error))")
        }
    }
}
