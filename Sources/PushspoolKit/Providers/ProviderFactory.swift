import Foundation
import PushspoolCore

public struct ProviderSetupError: Error, Sendable, CustomStringConvertible {
    public var problems: [String]
    public init(_ problems: [String]) { self.problems = problems }
    public var description: String { problems.joined(separator: "\n") }
}

/// Makes the providers named in `routes`, one instance per name, shared by its platforms and
/// by every app that names it.
public enum ProviderFactory {
    public static let knownNames = ConfigParser.providerNames

    public static func make(name: String, context: ProviderContext) throws -> any PushProvider {
        let config = context.config
        guard let kind = config.providerKind(name) ?? ProviderKind(rawValue: name) else {
            throw ProviderSetupError(["routes: provider \"\(name)\" is not available in this build"])
        }
        // A named provider (`"type"`) is built as its type's section would be, from a view of
        // the config in which it holds its type's name; its problems then name it.
        var view = context
        let type = kind.rawValue
        if name != type {
            view.config.providers[type] = config.providers[name]
            view.config.maxConnectionsByProvider[type] = config.maxConnections(for: name)
        }
        do {
            return try make(kind, name: name, context: view)
        } catch let error as ProviderSetupError where name != type {
            throw ProviderSetupError(error.problems.map { renamed($0, from: type, to: name) })
        }
    }

    private static func make(_ kind: ProviderKind, name: String, context: ProviderContext) throws -> any PushProvider {
        let config = context.config
        switch kind {
        case .sandbox:
            let outbox = config.providers[name]?.sandbox?.outbox ?? config.outboxPath
            return SandboxProvider(outbox: config.resolve(outbox))
        case .apns:
            var apns = try section(config.apns, name)
            // The topic of each app routed here: one key serves every app of its team.
            for app in config.apps(routingTo: name) {
                if let topic = config.apnsTopic(of: app) { apns.topics[app] = topic }
            }
            return try APNsProvider(config: apns, context: context)
        case .fcm: return try FCMProvider(config: section(config.fcm, name), context: context)
        case .wns: return try WNSProvider(config: section(config.wns, name), context: context)
        case .webpush: return try WebPushProvider(config: section(config.webpush, name), context: context)
        case .hms: return try HMSProvider(config: section(config.hms, name), context: context)
        case .adm: return try ADMProvider(config: section(config.adm, name), context: context)
        case .azure:
            return try AzureHubProvider(config: section(config.azure, name, routed: "to \"\(name)\" (connection_string and hub are required)"),
                                        context: context)
        }
    }

    /// `providers.<type>.field: …` as `providers.<name>.field: …`.
    static func renamed(_ problem: String, from type: String, to name: String) -> String {
        for prefix in ["providers.\(type).", "providers.\(type):"] where problem.contains(prefix) {
            return problem.replacingOccurrences(of: prefix, with: "providers.\(name)" + prefix.dropFirst("providers.\(type)".count))
        }
        return problem
    }

    /// The provider's config section, which routes need: missing is a setup problem naming it.
    private static func section<Section>(_ value: Section?, _ name: String, routed: String? = nil) throws -> Section {
        guard let value else {
            throw ProviderSetupError(["providers.\(name): missing, but routes send \(routed ?? "a platform to \(name)")"])
        }
        return value
    }
}
