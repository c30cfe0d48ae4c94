import PushspoolKit
import Foundation
import PushspoolCore

/// `pushspool fcm topics subscribe|unsubscribe --topic T [--app A] [--tags EXPR]`: (un)subscribes
/// the app's FCM devices the tag expression matches to an FCM topic through the Instance ID batch
/// API (`FCMTopicSubscription`). Each device the service refused is one stdout line (`failed
/// <device id>: <REASON>`), then the summary.
enum FCMCommands {
    static let usage = "usage: pushspool fcm topics subscribe|unsubscribe --topic T [--app A] [--tags EXPR]"

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
        let tally: FCMTopicSubscription.Tally
        do {
            tally = try FCMTopicSubscription(provider: fcm, registry: registry, policy: config.retry)
                .run(action, topic: topic, app: app, matching: expression,
                     refused: { device, reason in print("failed \(device.id): \(reason)") },
                     pruneFailed: { n, why in
                         FileHandle.standardError.write(Data("pushspool: \(label): could not remove \(n) gone device(s): \(why)\n".utf8))
                     })
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
    static func summary(_ action: FCMTopicBatch.Action, topic: String, app: String, _ t: FCMTopicSubscription.Tally) -> String {
        let failed = t.failed.values.reduce(0, +)
        var text = "fcm topics \(action.rawValue) \(topic) (app \(app)): \(t.done) \(action.rawValue)d, \(failed) failed"
        if failed > 0 {
            let reasons = t.failed.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            text += " (\(reasons)\(t.removed > 0 ? "; \(t.removed) gone device(s) removed from the registry" : ""))"
        }
        return text + ", \(t.requests) request\(t.requests == 1 ? "" : "s")"
    }
}
