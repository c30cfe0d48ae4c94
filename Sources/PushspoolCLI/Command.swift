import PushspoolKit

extension CLI {
    /// One command of the table (`CLI.table`): its name and help, the options and words it
    /// takes, and what runs it. `--help`, the argument parser, `pushspool completions` and the
    /// Command line reference's test all read these, so none of them can name an option the
    /// others do not know.
    struct Command: Sendable {
        var name: String
        /// Its line in `pushspool --help`: the command and the words it takes (`import FILE.jsonl`).
        var synopsis: String
        /// What it does, in a few words (`pushspool --help`, the zsh and fish completions).
        var summary: String
        var help: String
        /// Options that take one value, given at most once.
        var valued: Set<String> = []
        /// Options that take one value each time and may be repeated (the help says so).
        var repeatable: Set<String> = []
        var switches: Set<String> = []
        /// The words the command takes besides options; any other word is refused (exit 64).
        var positionals: Arguments.Positionals = .none
        var run: @Sendable (Arguments) throws(CLIError) -> ExitCode

        /// Every option it takes, its own and the common ones, sorted.
        var options: [String] { valued.union(repeatable).union(switches).union(CLI.commonValued).sorted() }
    }

    /// The options every command takes, each with one value.
    static let commonValued: Set<String> = ["spool", "config", "log-format", "log-level"]
}
