import PushspoolKit
import Foundation
import PushspoolCore

/// `pushspool apns channels create|list|delete --app A`: an app's iOS 18 broadcast channels,
/// made and removed through Apple's channel management API and kept in the registry with their
/// app, so that `list` needs no round trip (`--refresh` asks Apple and reconciles) and an
/// `apns_channel` job is checked against them when it is picked up.
enum APNsChannelCommands {
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        let words = args.positionals
        guard words.count == 2, words[0] == "channels", ["create", "list", "delete"].contains(words[1]) else {
            throw CLIError(.usage, "apns: usage: pushspool apns channels create|list|delete --app APP")
        }
        let action = words[1]
        let runtime = try Runtime(args, requireSecrets: action != "list" || args.has("refresh"))
        let config = runtime.config
        let app = args.value("app") ?? config.defaultApp
        if let why = RegistryDefaults(config).appProblem(app) { throw CLIError(.usage, "apns channels: --app: \(why)") }
        let registry = try runtime.openRegistry()
        defer { registry.close() }
        if action == "list", !args.has("refresh") {
            try printChannels(registry, app: app)
            return .ok
        }
        let (client, bundle) = try openClient(config, spool: runtime.spool, app: app)
        defer { client.shutdown() }
        do {
            switch action {
            case "create":
                let policy = try storagePolicy(args.value("storage-policy"))
                let id = try client.create(bundleID: bundle, storagePolicy: policy)
                try registry.saveChannel(APNsChannel(id: id, app: app, environment: client.environment, storagePolicy: policy, createdAt: Date()))
                print(id)
            case "delete":
                guard let id = args.value("channel") else { throw CLIError(.usage, "apns channels delete: --channel is required") }
                guard APNsChannelID.isValid(id) else { throw CLIError(.usage, "apns channels delete: --channel: \(APNsChannelID.rule)") }
                try client.delete(bundleID: bundle, channelID: id)
                try registry.removeChannel(app: app, id: id)
                print("deleted \(id)")
            default:  // list --refresh
                let known = Dictionary(uniqueKeysWithValues: try registry.channels(app: app).map { ($0.id, $0) })
                var channels: [APNsChannel] = []
                for id in try client.list(bundleID: bundle) where APNsChannelID.isValid(id) {
                    if let mine = known[id] { channels.append(mine); continue }
                    // A channel made elsewhere (another tool, Apple's console): its policy is Apple's to tell.
                    let policy = try client.storagePolicy(bundleID: bundle, channelID: id)
                    channels.append(APNsChannel(id: id, app: app, environment: client.environment, storagePolicy: policy, createdAt: Date()))
                }
                try registry.replaceChannels(app: app, environment: client.environment, with: channels)
                try printChannels(registry, app: app)
            }
        } catch let failure as APNsChannelClient.Failure {
            throw CLIError(.ioError, "apns channels \(action): \(failure)")
        } catch let error as RegistryError {
            throw CLIError(.ioError, "apns channels \(action): \(error.message)")
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError(.software, "apns channels \(action): \(error)")
        }
        return .ok
    }

    /// One line per channel: id, storage policy, environment (JSON Lines, as `devices` lists).
    private static func printChannels(_ registry: any RegistryDatabase, app: String) throws(CLIError) {
        let channels: [APNsChannel]
        do { channels = try registry.channels(app: app) } catch { throw CLIError(.ioError, "apns channels list: \(error.message)") }
        for c in channels {
            var line = JSONLineWriter(capacity: 160)
            line.field("channel", c.id)
            line.field("app", c.app)
            line.field("environment", c.environment.rawValue)
            line.field("storage_policy", c.storagePolicy)
            line.field("created_at", Timestamp.rfc3339(c.createdAt))
            FileHandle.standardOutput.write(Data(line.line()))
        }
    }

    static func storagePolicy(_ value: String?) throws(CLIError) -> Int {
        guard let value else { return 0 }
        guard let n = Int(value), n == 0 || n == 1 else {
            throw CLIError(.usage, "apns channels create: --storage-policy: must be 0 (no message stored) or 1 (the most recent kept), got \(value)")
        }
        return n
    }

    /// The app's APNs provider as a channel client, and the app's bundle id.
    private static func openClient(_ config: Config, spool: Spool, app: String) throws(CLIError) -> (APNsChannelClient, String) {
        guard let name = config.apps[app]?.routes[.apns], case .apns(let apns)? = config.providers[name] else {
            throw CLIError(.config, "apns channels: app \(app) does not send APNs through an apns provider (routes.apns)")
        }
        let bundle = config.apps[app]?.apnsTopic ?? apns.topic
        let (context, problems) = EngineSetup.providerContext(config: config, spool: spool, log: Log.shared)
        if !problems.isEmpty { throw CLIError(.config, problems.joined(separator: "\n")) }
        do {
            return (try APNsChannelClient(config: apns, context: context), bundle)
        } catch let error as ProviderSetupError {
            throw CLIError(.config, error.description)
        } catch {
            throw CLIError(.config, "apns channels: \(error)")
        }
    }
}
