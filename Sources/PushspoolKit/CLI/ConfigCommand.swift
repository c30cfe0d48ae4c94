import Foundation
import PushspoolCore

enum ConfigCommand {
    /// `config --check`: loads the config, sets up every routed provider (which reads and
    /// checks keys and service accounts) and checks the `http` section's files (users, tokens,
    /// TLS), then prints the effective config, secrets redacted. Every problem is listed at once.
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard args.has("check") else { throw CLIError(.usage, "config: use --check") }
        let config = try Runtime.loadConfig(args, requireSecrets: true)
        let frontDoor = config.http.map { FrontDoorChecks.problems($0, resolve: config.resolve) } ?? []
        let frontDoorLines = frontDoor.map { "\n  \($0)" }.joined()
        do {
            let routes = try Runtime.makeRoutes(config: config, spool: nil, log: Log.shared)
            for state in routes.values { state.provider.shutdown() }
        } catch {
            // The providers' problems first, then the front door's, in the same list.
            throw CLIError(error.code, error.description + frontDoorLines)
        }
        if !frontDoor.isEmpty { throw CLIError(.config, "configuration problems:" + frontDoorLines) }
        print(prettyJSON(config.redacted()))
        print("configuration ok")
        return .ok
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
