import PushspoolKit
import Foundation
import PushspoolCore

/// The `pushspool` command line: a thin layer over the library. Each command parses its
/// arguments, does its work through library types, prints, and returns a sysexits code.
public enum CLI {
    public static func main(_ arguments: [String]) -> Never {
        StandardOutput.guardClosedDescriptors()
        let args = Array(arguments.dropFirst())
        // Long-running commands' stdout is a log: each report leaves as it is printed; a person
        // at a terminal sees each line as it comes. Elsewhere (a file, a pipe) 64 KiB at a time.
        StandardOutput.shared.setLineBuffered(["run", "serve"].contains(args.first ?? "") || isatty(1) != 0)
        let code: ExitCode
        do {
            code = try run(args)
        } catch {
            Log.shared.flushRepeats()
            // An error may quote what the user gave (an id, a tag, a value): inert on a terminal.
            // Some errors list one problem per line (config problems): each line is escaped.
            let text = error.description.split(separator: "\n", omittingEmptySubsequences: false)
                .map { TerminalText.escaped(String($0)) }.joined(separator: "\n")
            _ = StandardOutput.shared.finish()
            FileHandle.standardError.write(Data("pushspool: \(text)\n".utf8))
            end(error.code.rawValue)
        }
        Log.shared.flushRepeats()
        // Output that could not be written is a failure, whatever the command did (exit 74).
        if let failed = StandardOutput.shared.finish() { end(failed.rawValue) }
        end(code.rawValue)
    }

    /// Ends the process without the C libraries' exit-time teardown (their `atexit` handlers and
    /// destructors). The work that must finish has finished and every file was synced by then,
    /// but Dispatch's threads may still be inside a library (for instance a TLS connect still
    /// under way when its HTTP/2 client shut down: connects run on a queue the client does not
    /// wait for), and `exit` would free that library's globals under them: OpenSSL's handler
    /// frees its providers and tables. A resumed `run --once` aborted once in CI with its work
    /// all done: its heap was found corrupt as it ended. C's buffered output (`print`) is
    /// flushed first.
    static func end(_ code: Int32) -> Never {
        fflush(nil)
        _exit(code)
    }

    static func run(_ args: [String]) throws(CLIError) -> ExitCode {
        guard let command = args.first, !["-h", "--help", "help"].contains(command) else {
            print(usage)
            return args.isEmpty ? .usage : .ok
        }
        if command == "--version" || command == "version" {
            print("pushspool \(version)")
            return .ok
        }
        let rest = Array(args.dropFirst())
        if let spec = commands[command], rest.contains("--help") || rest.contains("-h") {
            print(spec.help + "\n" + commonOptions)
            return .ok
        }
        let (spec, parsed) = try parse(command: command, rest)
        try configureLog(parsed, command: command)
        return try spec.run(parsed)
    }

    /// The command and its arguments as `run` takes them, without running anything (the
    /// README's command lines are checked with this): an unknown command, word or option is
    /// refused here (exit 64).
    static func parse(command: String, _ rest: [String]) throws(CLIError) -> (Command, Arguments) {
        guard let spec = commands[command] else {
            let near = Spelling.closest(to: command, among: commands.keys).map { " (did you mean \"\($0)\"?)" } ?? ""
            throw CLIError(.usage, "unknown command \"\(command)\"\(near); see pushspool --help")
        }
        do {
            let parsed = try Arguments(rest, command: command, valued: spec.valued.union(commonValued),
                                       repeatable: spec.repeatable, switches: spec.switches, positionals: spec.positionals)
            return (spec, parsed)
        } catch {
            throw CLIError(.usage, "\(command): \(error.description); see pushspool \(command) --help")
        }
    }

    /// `--log-format text|logfmt|json` and `--log-level debug|info|warning|error`.
    static func configureLog(_ args: Arguments, command: String) throws(CLIError) {
        var format: StreamLogHandler.Format?
        if let f = args.value("log-format") {
            guard let known = StreamLogHandler.Format(rawValue: f) else {
                throw CLIError(.usage, "\(command): --log-format: unknown format \"\(f)\" (expected text, logfmt, json)")
            }
            format = known
        }
        var level: Log.Level?
        if let l = args.value("log-level") {
            guard let known = Log.Level(label: l) else {
                throw CLIError(.usage, "\(command): --log-level: unknown level \"\(l)\" (expected debug, info, warning, error)")
            }
            level = known
        }
        Log.shared.configure(handler: format.map { StreamLogHandler(format: $0, board: .shared) }, minimum: level)
    }

    public static let version = "0.1.0"

    /// What every command takes, shown under each command's own help.
    static let commonOptions = """

          Every command also takes:
            --config FILE   the configuration (default ./pushspool.json, else built in: all platforms to the sandbox)
            --spool DIR     the spool (default: the config's "spool", else ./jobs; `pushspool init` creates it)
            --log-format text|logfmt|json   how log lines on stderr look (default text)
            --log-level debug|info|warning|error   the least severe level logged (default info)
        """

    /// Every command, in the order `pushspool --help` lists them: what `--help`, the parser, the
    /// shell completions and the Command line reference's test all read.
    static let table: [Command] = [
        Command(name: "init", synopsis: "init", summary: "create the spool and its registry (first)", help: """
            usage: pushspool init [--spool DIR] [--config FILE]
              Create the spool (tmp/ incoming/ active/ done/ failed/ results/ outbox/ control/;
              tmp/, incoming/ and control/ group-writable for writers and operators, nothing
              world-writable) and its registry. The spool is --spool DIR (or the config's
              "spool", else ./jobs), never a bare word: `init DIR` is refused. Every other command
              refuses a spool that does not exist yet, so a mistyped path never becomes a new,
              silent spool. Running it on an existing spool checks it and changes nothing.
            """, run: InitCommand.run),
        Command(name: "run", synopsis: "run [--once]", summary: "watch the spool and dispatch jobs", help: """
            usage: pushspool run [--once] [--spool DIR] [--config FILE]
              Watch the spool and dispatch jobs (inotify on Linux, a vnode source on macOS, polling
              otherwise). --once: process what is due now, wait for it, exit (for cron).
            """, switches: ["once"], run: RunCommand.run),
        Command(name: "submit", synopsis: "submit", summary: "write a send job into the spool", help: """
            usage: pushspool submit (--to-tag TAG | --tags EXPR | --broadcast) --pns apns,fcm,wns
                                    --message TEXT [--from NAME] [--title T] [--id ID]
                                    [--not-before RFC3339] [--allow-duplicate] [--spool DIR]
              Write a send job into the spool atomically (tmp/ then rename into incoming/).
              An --id whose result log is complete (done or cancelled) is refused (exit 65),
              naming the log: an id is sent once. --allow-duplicate writes it anyway; the run
              then reports it a duplicate and sends nothing.
              Each option takes one value, given once: quote a message with spaces
              (--message "Dinner is ready"); --pns takes several platforms in one value, with commas.
            """, valued: ["to-tag", "tags", "pns", "message", "from", "title", "id", "not-before"],
            switches: ["broadcast", "allow-duplicate"], run: SubmitCommand.run),
        Command(name: "validate", synopsis: "validate FILE...", summary: "check job files", help: """
            usage: pushspool validate [--resolve] FILE...
              Check job files; print each problem with its field. Exit 65 if any file is invalid.
              --resolve: a dry run of each send job against the registry: devices reached per
              platform and exactly what each platform would receive, per language. Sends nothing.
            """, switches: ["resolve"], positionals: .many("FILE..."), run: SubmitCommand.validate),
        Command(name: "register", synopsis: "register", summary: "add or update a device", help: """
            usage: pushspool register --platform apns|fcm|wns|gcm|web --handle HANDLE [--tag TAG]... [--id ID] [--lang TAG]
                                      [--app APP] [--environment production|development] [--token-kind KIND] [--tz ZONE]
              Add or update a device in the registry (upsert by installation id). Several tags:
              repeat --tag, one tag each (--tag username:carol --tag follows_RedSox). --lang: the
              user's language (BCP 47, e.g. pt-BR) for localized jobs. For web, HANDLE is the
              browser's PushSubscription JSON: '{"endpoint":"https://…","keys":{"p256dh":…,"auth":…}}'.
              --app: the device's app (default: the config's default app). --environment (APNs
              only; sandbox is accepted for development): default, the app's APNs provider's.
              --token-kind (APNs only; default device): which of Apple's tokens HANDLE is: device,
              voip, liveactivity (one activity's update token), pushtostart, location,
              complication, fileprovider, pushtotalk, widgets. A job reaches only the tokens of
              the kind its push_type goes to.
              --tz: the user's IANA time zone (e.g. Europe/Paris) for local_time jobs; default:
              the app's default_tz, else UTC.
            """, valued: ["platform", "handle", "id", "lang", "app", "environment", "token-kind", "tz"], repeatable: ["tag"], run: RegistryCommands.register),
        Command(name: "unregister", synopsis: "unregister", summary: "remove a device", help: """
            usage: pushspool unregister (--id ID | --handle HANDLE [--app APP])
              Remove a device from the registry. A handle is looked up in --app (default: the
              default app).
            """, valued: ["id", "handle", "app"], run: RegistryCommands.unregister),
        Command(name: "devices", synopsis: "devices", summary: "list or count devices (--tags EXPR, --count)", help: """
            usage: pushspool devices [--tags EXPR] [--platform P]... [--app APP]... [--count | --by tz]
              List registered devices (JSON Lines, handles omitted) or count them. --tags: a tag
              expression (one value; quote it). Several platforms: repeat --platform, one each;
              several apps: repeat --app. --by tz: one line per time zone with its device count
              (a device without tz counted in its app's default_tz, else UTC).
            """, valued: ["tags", "by"], repeatable: ["platform", "app"], switches: ["count"], run: RegistryCommands.devices),
        Command(name: "import", synopsis: "import FILE.jsonl", summary: "bulk-register devices", help: """
            usage: pushspool import FILE.jsonl
              Bulk-register devices from lines {"id"?, "platform", "handle", "tags": [...], "lang"?, "app"?,
              "environment"?, "token_kind"?, "tz"?}, in one transaction.
              A line refused (its number and field on stderr) does not stop the others (exit 65 at the
              end). A handle already registered under another id moves to the line's id (the other
              row is deleted); the summary counts those moves and names the first few.
            """, positionals: .upTo(1, "one FILE.jsonl"), run: RegistryCommands.importFile),
        Command(name: "registry", synopsis: "registry migrate|backup", summary: "upgrade the registry's schema, or back it up", help: """
            usage: pushspool registry migrate [--config FILE]
                   pushspool registry backup FILE [--config FILE]
              migrate: create the registry's schema or bring it to this version of pushspool, and
              say from which version. Other commands migrate on their own; with a PostgreSQL
              registry shared by several hosts, run this once when upgrading. A schema newer than
              this binary's is refused (upgrade this host), as `run` refuses it.
              backup: copy a SQLite registry to FILE through SQLite's online backup, while `run`,
              `serve` and imports keep writing: one consistent snapshot, checked (integrity_check)
              and counted before it replaces FILE. Restore it by stopping pushspool and copying it
              over the registry. A PostgreSQL registry is backed up with pg_dump instead.
            """, positionals: .words([["migrate", "backup"]], extra: 1, "migrate, or backup FILE"), run: RegistryCommand.run),
        Command(name: "status", synopsis: "status [--json]", summary: "queue depth, active jobs, paused providers, recent failures", help: """
            usage: pushspool status [ID] [--json] [--spool DIR] [--config FILE]
              Queue depth per folder (with the oldest job's age), active jobs with progress,
              paused providers and recent failures. With ID: that job's state and, for a job that
              sent anything, its funnel (targets → sent → delivered → received → opened, per app
              and platform; received and opened as the apps report them).
            """, switches: ["json"], positionals: .upTo(1, "one job id"), run: StatusCommand.run),
        Command(name: "cancel", synopsis: "cancel ID", summary: "cancel a waiting or running job", help: """
            usage: pushspool cancel ID [--spool DIR]
              Cancel a job waiting in incoming/ (even one waiting for its not_before) or running.
              A running dispatcher acts within a second: requests in flight finish, nothing more
              is sent, the job moves to done/ with summary status "cancelled" and "not_sent".
              Without a running dispatcher, the next `run` does it.
            """, positionals: .upTo(1, "one job id"), run: ControlCommands.cancel),
        Command(name: "pause", synopsis: "pause ID", summary: "pause a waiting or running job", help: """
            usage: pushspool pause ID [--spool DIR]
              Pause a waiting or running job: no new request starts (in-flight ones finish), and
              the job stays in active/, across restarts, until `pushspool resume ID`.
            """, positionals: .upTo(1, "one job id"), run: ControlCommands.pause),
        Command(name: "resume", synopsis: "resume ID", summary: "resume a paused job", help: """
            usage: pushspool resume ID [--spool DIR]
              Resume a paused job: it continues where it stopped, never sending a target twice.
            """, positionals: .upTo(1, "one job id"), run: ControlCommands.resume),
        Command(name: "results", synopsis: "results ID", summary: "print a job's result log (with PostgreSQL, any host's job)", help: """
            usage: pushspool results ID [--funnel [--json]] [--spool DIR] [--config FILE]
              Print a job's result log (JSON Lines): this spool's results/ID.jsonl, else, with a
              PostgreSQL registry, the log as the shared queue holds it, from any host.
              --funnel: the job's funnel instead (text, or one JSON object with --json).
            """, switches: ["funnel", "json"], positionals: .upTo(1, "one job id"), run: ResultsCommand.run),
        Command(name: "config", synopsis: "config --check", summary: "validate the configuration and credentials", help: """
            usage: pushspool config --check [--config FILE]
              Validate the configuration and credentials; print the effective config with secrets
              redacted. Exit 78 listing every problem.
            """, switches: ["check"], run: ConfigCommand.run),
        Command(name: "webpush", synopsis: "webpush keygen", summary: "make a VAPID key for Web Push and print its public key", help: """
            usage: pushspool webpush keygen [--out FILE]
              Write a new VAPID key (EC P-256, PEM PKCS#8, mode 0600) to FILE (default vapid.pem;
              never overwritten) and print its public key in base64url: the applicationServerKey
              that the site's page passes to pushManager.subscribe.
            """, valued: ["out"], positionals: .subcommand("keygen"), run: WebPushCommands.run),
        Command(name: "fcm", synopsis: "fcm topics subscribe|unsubscribe", summary: "(un)subscribe devices to an FCM topic", help: """
            usage: pushspool fcm topics subscribe|unsubscribe --topic T [--app A] [--tags EXPR] [--config FILE] [--spool DIR]
              (Un)subscribe the app's FCM devices that the tag expression matches (all of them
              without --tags) to topic T through Google's Instance ID batch API, 1,000 tokens per
              request. Prints one line per device the service refused (`failed <id>: <REASON>`),
              then the counts; a token the service says is gone (NOT_FOUND) is removed from the
              registry. Exit 74 when a request failed for good (after retries).
            """, valued: ["app", "topic", "tags"], positionals: .words([["topics"], ["subscribe", "unsubscribe"]], extra: 0, "topics and subscribe or unsubscribe"), run: FCMCommands.run),
        Command(name: "hub", synopsis: "hub sync", summary: "write every registration of hub-routed platforms to the hub", help: """
            usage: pushspool hub sync [--app APP] [--config FILE] [--spool DIR]
              Write every local registration of the platforms routed to azure to the hub as an
              installation (PUT /<hub>/installations/<id>: tags plus lang:<lang>). Idempotent; use it
              to move an existing registry onto a hub, or to repair after the hub was unreachable.
              Each app's devices go to its own hub; --app: that app's only.
            """, valued: ["app"], positionals: .subcommand("sync"), run: HubCommands.run),
        Command(name: "apns", synopsis: "apns channels", summary: "create, list or delete an app's iOS 18 broadcast channels", help: """
            usage: pushspool apns channels create [--app APP] [--storage-policy 0|1]
                   pushspool apns channels list [--app APP] [--refresh]
                   pushspool apns channels delete [--app APP] --channel ID
              An app's iOS 18 broadcast channels, through Apple's channel management API with the
              app's APNs key. create prints the new channel id (storage policy 0: nothing stored for
              offline devices, the default; 1: the most recent message kept). list shows the channels
              the registry keeps for the app, without asking Apple; --refresh asks Apple and makes the
              registry agree. A job with apns_channel goes only to a channel listed here for its app.
            """, valued: ["app", "storage-policy", "channel"], switches: ["refresh"], positionals: .words([["channels"], ["create", "list", "delete"]], extra: 0, "channels create|list|delete"),
            run: APNsChannelCommands.run),
        Command(name: "serve", synopsis: "serve", summary: "the HTTP front door: the tutorial's app API, the job API, /metrics", help: """
            usage: pushspool serve [--config FILE] [--spool DIR]
              The HTTP front door on http.listen (TLS when http.tls names a certificate and key):
              the tutorial's app API (/api/register, /api/notifications; HTTP Basic against
              http.users_file), the job and device API for services (/v1/jobs, /v1/devices; bearer
              tokens from http.tokens_file), /metrics and /healthz. A send becomes a job file,
              durable before the answer; `run` does the sending. Stops on SIGINT/SIGTERM, answering
              the requests in progress first.
            """, run: ServeCommand.run),
        Command(name: "demo", synopsis: "demo", summary: "run the sample jobs through the sandbox, no credentials needed", help: """
            usage: pushspool demo [--spool DIR]
              The zero-credential tour: seeds a sample registry from examples/, drops the sample jobs
              from examples/jobs/ into the spool, runs them through the sandbox provider and prints
              the results. Never sends anything anywhere: every platform is routed to the sandbox.
            """, run: DemoCommand.run),
        Command(name: "completions", synopsis: "completions bash|zsh|fish", summary: "print a shell's completion script", help: """
            usage: pushspool completions bash|zsh|fish
              Print the completion script of that shell for pushspool's commands, options and
              their values, written from the same table as --help. Try it in the current shell:
                source <(pushspool completions bash)
              Install it for good:
                pushspool completions bash > /etc/bash_completion.d/pushspool
                pushspool completions zsh > "${fpath[1]}/_pushspool"
                pushspool completions fish > ~/.config/fish/completions/pushspool.fish
            """, positionals: .words([ShellCompletion.Shell.allCases.map(\.rawValue)], extra: 0, "bash, zsh or fish"),
            run: CompletionsCommand.run),
    ]

    static let commands: [String: Command] = Dictionary(uniqueKeysWithValues: table.map { ($0.name, $0) })

    static var usage: String {
        // The summaries in one column; a synopsis too long for it has its summary on the next line.
        let lines = table.map { command in
            command.synopsis.count < 20 ? "  " + command.synopsis.padding(toLength: 20, withPad: " ", startingAt: 0) + command.summary
                                        : "  \(command.synopsis)\n" + String(repeating: " ", count: 22) + command.summary
        }
        return """
            pushspool \(version) — a queue-driven batch push-notification dispatcher

            usage: pushspool COMMAND [options]   (pushspool COMMAND --help for details)

            \(lines.joined(separator: "\n"))

            Common options: --spool DIR (default ./jobs), --config FILE (default ./pushspool.json).
            A word or option a command does not take is refused (exit 64), never ignored.
            Exit codes: \(ExitCode.allCases.map { "\($0.rawValue) \($0.meaning)" }.joined(separator: ", ")).
            """
    }
}
