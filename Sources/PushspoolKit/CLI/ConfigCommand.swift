import Foundation
import PushspoolCore

enum ConfigCommand {
    /// `config --check`: loads the config and sets up every routed provider (which reads and
    /// checks keys and service accounts), then prints the effective config, secrets redacted.
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard args.has("check") else { throw CLIError(.usage, "config: use --check") }
        let config = try Runtime.loadConfig(args, requireSecrets: true)
        let routes = try Runtime.makeRoutes(config: config, spool: nil, log: Log.shared)
        for state in routes.values { state.provider.shutdown() }
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
