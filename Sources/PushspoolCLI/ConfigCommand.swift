import PushspoolKit
import PushspoolServer
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PushspoolCore

enum ConfigCommand {
    /// `config --check`: loads the config, sets up every routed provider (which reads and
    /// checks keys and service accounts) and checks the `http` section's files (users, tokens,
    /// TLS), then prints the effective config, secrets redacted. Every problem is listed at once.
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard args.has("check") else { throw CLIError(.usage, "config: use --check") }
        // An `env:` secret that is not set is a problem, but it must not hide the others (the key
        // files behind it): everything else is checked with it as a placeholder, leaving out what
        // only follows from the placeholder.
        var problems: [String] = []
        do {
            _ = try ConfigLoader.load(explicit: args.value("config"), requireSecrets: true)
        } catch {
            problems = error.problems
        }
        let config: Config
        do {
            config = try Runtime.loadConfig(args, requireSecrets: problems.isEmpty)
        } catch {
            // Not only secrets: the strict pass's list is the whole list.
            throw problems.isEmpty ? error : CLIError(.config, listing(problems))
        }
        let unset = config.unsetSecrets.values
        // Every app's providers: each app's routes resolve and its credentials load.
        let (apps, providerProblems) = EngineSetup.appsAndProblems(config: config, spool: nil, log: Log.shared)
        // HMS and ADM credentials: only their token endpoints can tell (unless a secret is unset).
        var tokenProblems: [String] = []
        if providerProblems.isEmpty && unset.isEmpty {
            for state in apps.providers { if let check = state.provider as? any TokenCheck, let p = check.tokenProblem() { tokenProblems.append(p) } }
        }
        apps.shutdown()
        problems += providerProblems.filter { p in !unset.contains { p.hasPrefix($0.key + ":") || p.contains($0.placeholder) } }
        problems += tokenProblems
        problems += metricsProblems(config)
        problems += config.http.map { FrontDoorChecks.problems($0, resolve: config.resolve) } ?? []
        if !problems.isEmpty { throw CLIError(.config, listing(problems)) }
        print(prettyJSON(config.redacted()))
        print("configuration ok")
        return .ok
    }

    static func listing(_ problems: [String]) -> String {
        "configuration problems:\n" + problems.map { "  \($0)" }.joined(separator: "\n")
    }

    /// The metrics file is rewritten every few seconds by a temporary file renamed into place:
    /// its folder must exist and be writable, or no metrics are ever written.
    static func metricsProblems(_ config: Config) -> [String] {
        guard let textfile = config.metrics.textfile else { return [] }
        let folder = config.resolve(textfile).deletingLastPathComponent().path
        var st = stat()
        guard stat(folder, &st) == 0 else {
            return ["metrics.textfile: the folder \(folder) \(errno == ENOENT ? "does not exist" : "cannot be reached: \(String(cString: strerror(errno)))") (create it, writable by the user running pushspool)"]
        }
        guard st.st_mode & S_IFMT == S_IFDIR else { return ["metrics.textfile: \(folder) is not a folder"] }
        if access(folder, W_OK | X_OK) != 0 {
            let code = errno   // before getpwuid, which may change it
            let who = SpoolAccess.userName(geteuid()) ?? "uid \(geteuid())"
            return ["metrics.textfile: user \(who) may not write to \(folder) (\(String(cString: strerror(code))))"]
        }
        return []
    }

    /// Indented JSON for people (result logs and outboxes stay compact).
    static func prettyJSON(_ v: JSONValue, indent: String = "") -> String {
        let inner = indent + "  "
        switch v {
        case .object(let pairs) where !pairs.isEmpty:
            return "{\n" + pairs.map { inner + JSONValue.string($0.0).encodedString + ": " + prettyJSON($0.1, indent: inner) }
                .joined(separator: ",\n") + "\n" + indent + "}"
        case .array(let items) where !items.isEmpty && items.contains(where: { if case .object = $0 { return true }; return false }):
            return "[\n" + items.map { inner + prettyJSON($0, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        default:
            return v.encodedString
        }
    }
}
