import PushspoolKit

/// `pushspool completions bash|zsh|fish`: prints the script `ShellCompletion` writes from the
/// command table.
enum CompletionsCommand {
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard args.positionals.count == 1, let shell = ShellCompletion.Shell(rawValue: args.positionals[0]) else {
            throw CLIError(.usage, "completions: give a shell: bash, zsh or fish")
        }
        print(ShellCompletion(commands: CLI.table).script(for: shell), terminator: "")
        return .ok
    }
}
