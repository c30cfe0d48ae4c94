import Foundation
import PushspoolCore

/// Reads `pushspool.json` and hands its bytes to `ConfigParser` (PushspoolCore), which resolves
/// `env:NAME` values and reports every problem at once, each naming its key.
public enum ConfigLoader {
    /// `explicit` (from `--config`), else `./pushspool.json` if present, else the built-in default.
    /// `requireSecrets: false` (commands that never talk to a service: `submit`, `status`,
    /// `devices`…) lets `env:` values that are not set pass, so a producer can drop jobs without
    /// holding the dispatcher's credentials.
    public static func load(explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment,
                            requireSecrets: Bool = true) throws(ConfigError) -> Config {
        let cwd = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let path: String
        if let explicit {
            path = explicit
        } else if FileManager.default.fileExists(atPath: cwd.appendingPathComponent("pushspool.json").path) {
            path = "pushspool.json"
        } else {
            var config = Config()
            config.baseDirectory = cwd
            return config
        }
        let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : cwd.appendingPathComponent(path)
        let bytes: [UInt8]
        do { bytes = try FileIO.readAll(url) } catch {
            throw ConfigError(problems: ["\(path): cannot read: \(error)"])
        }
        var config = try ConfigParser.parse(bytes, source: path, environment: environment, requireSecrets: requireSecrets)
        config.baseDirectory = url.deletingLastPathComponent()
        return config
    }

    /// Parses a config document (also used by tests).
    public static func parse(_ json: JSONValue, environment: [String: String] = [:]) throws(ConfigError) -> Config {
        try ConfigParser.parse(json, environment: environment)
    }
}
