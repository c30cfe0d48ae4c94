import PushspoolKit
import Foundation
import PushspoolCore

/// `pushspool fcm topics subscribe|unsubscribe --topic T [--app A] [--tags EXPR]`: (un)subscribes
/// the app's FCM devices the tag expression matches to an FCM topic through the Instance ID batch
/// API, 1,000 tokens per request, streaming the registry. Each device the service refused is one
/// stdout line (`failed <device id>: <REASON>`), then the summary; a device whose token the service
/// says is gone (`NOT_FOUND`) is removed from the registry, as a send's `UNREGISTERED` is.
enum FCMCommands {
    static let usage = "usage: pushspool fcm topics subscribe|unsubscribe --topic T [--app A] [--tags EXPR]"

    struct Tally {
        var done = 0, requests = 0, removed = 0
        var failed: [String: Int] = [:]
        /// A request that failed for good (the service unreachable, the credentials refused).
        var requestFailure: String?
    }

    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        guard args.positionals.count == 2, args.positionals[0] == "topics",
              let action = FCMTopicBatch.Action(rawValue: args.positionals[1]) else {
            throw CLIError(.usage, "fcm: \(usage)")
        }
        let label = "fcm topics \(action.rawValue)"
        // Everything FCM would refuse is refused here, before any request.
        guard let topic = args.value("topic") else { throw CLIError(.usage, "\(label): --topic is required") }
        if let why = FCMTopicBatch.topicProblem(topic) { throw CLIError(.usage, "\(label): --topic: \(why)") }
        var expression: TagExpression?
        if let text = args.value("tags") {
            do { expression = try TagExpression.parse(text) } catch { throw CLIError(.usage, "\(label): --tags: \(error.description)") }
        }
        let runtime = try Runtime(args, requireSecrets: true)
        let config = runtime.config
        let app = args.value("app") ?? config.defaultApp
        if let why = RegistryDefaults(config).appProblem(app) { throw CLIError(.usage, "\(label): --app: \(why)") }
        let route = config.apps[app]?.routes[.fcm] ?? "sandbox"
        guard config.providerKind(route) == .fcm else {
            throw CLIError(.config, "\(label): app \(app) routes fcm to \(route), not to an FCM provider (topics are FCM's)")
        }
        let apps: AppRoutes
        do { apps = try EngineSetup.makeApps(config: only(route, of: config), spool: runtime.spool, log: Log.shared) } catch { throw CLIError(error) }
        defer { apps.shutdown() }
        guard let fcm = apps.state(app: app, platform: .fcm)?.provider as? FCMProvider else {
            throw CLIError(.config, "\(label): app \(app) has no FCM provider")
        }
        let registry = try runtime.openRegistry()
        defer { registry.close() }
        var tally = Tally()
        var batch: [Device] = []
        func flush() {
            let (errors, requests, failure) = fcm.topicBatch(action, topic: topic, tokens: batch.map(\.handle), policy: config.retry)
            tally.requests += requests
            if let failure { tally.requestFailure = failure }
            var gone: [GoneDevice] = []
            for (device, error) in zip(batch, errors) {
                guard let error else { tally.done += 1; continue }
                tally.failed[error, default: 0] += 1
                print("failed \(device.id): \(error)")
                if FCMTopicBatch.isGone(error) { gone.append(GoneDevice(id: device.id, handle: device.handle, since: nil)) }
            }
            if !gone.isEmpty {
                do { tally.removed += try registry.removeGone(gone) } catch {
                    FileHandle.standardError.write(Data("pushspool: \(label): could not remove \(gone.count) gone device(s): \(RegistryError.detail(error))\n".utf8))
                }
            }
            batch.removeAll(keepingCapacity: true)
        }
        do {
            try registry.forEach(platforms: [.fcm], apps: [app], matching: expression) { device in
                batch.append(device)
                if batch.count == FCMTopicBatch.maxTokens { flush() }
                return true
            }
            if !batch.isEmpty { flush() }
        } catch {
            throw CLIError(.ioError, "\(label): reading the registry failed: \(RegistryError.detail(error))")
        }
        print(summary(action, topic: FCMTopicBatch.topicName(topic), app: app, tally))
        return tally.requestFailure == nil ? .ok : .ioError
    }

    /// The config with every route but `route` (FCM) sent to the sandbox: only that provider is set up.
    static func only(_ route: String, of config: Config) -> Config {
        var one = config
        let keep = { (routes: [Platform: String]) in
            Dictionary(uniqueKeysWithValues: Platform.allCases.map { ($0, $0 == .fcm && routes[.fcm] == route ? route : "sandbox") })
        }
        one.routes = keep(one.routes)
        one.appsSection = one.appsSection?.mapValues { app in
            var app = app
            app.routes = keep(app.routes)
            return app
        }
        return one
    }

    /// `fcm topics subscribe news (app shop): 2497 subscribed, 3 failed (INVALID_ARGUMENT 1, NOT_FOUND 2; 2 gone devices removed), 3 requests`.
    static func summary(_ action: FCMTopicBatch.Action, topic: String, app: String, _ t: Tally) -> String {
        let failed = t.failed.values.reduce(0, +)
        var text = "fcm topics \(action.rawValue) \(topic) (app \(app)): \(t.done) \(action.rawValue)d, \(failed) failed"
        if failed > 0 {
            let reasons = t.failed.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            text += " (\(reasons)\(t.removed > 0 ? "; \(t.removed) gone device(s) removed from the registry" : ""))"
        }
        return text + ", \(t.requests) request\(t.requests == 1 ? "" : "s")"
    }
}
