import PushspoolKit

/// `pushspool registry migrate|backup`: the registry's two maintenance subcommands.
enum RegistryCommand {
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        switch args.positionals.first {
        case "migrate": return try RegistryMigrateCommand.run(args)
        case "backup": return try RegistryBackupCommand.run(args)
        default: throw CLIError(.usage, "registry: give a subcommand: `registry migrate` or `registry backup FILE`")
        }
    }
}
