import Foundation
import PushspoolCore

public struct ProviderSetupError: Error, Sendable, CustomStringConvertible {
    public var problems: [String]
    public init(_ problems: [String]) { self.problems = problems }
    public var description: String { problems.joined(separator: "\n") }
}

/// Makes the providers named in `routes`, one instance per name, shared by its platforms.
public enum ProviderFactory {
    public static let knownNames = ConfigParser.providerNames

    public static func make(name: String, context: ProviderContext) throws -> any PushProvider {
        let config = context.config
        switch name {
        case "sandbox":
            return SandboxProvider(outbox: config.resolve(config.outboxPath))
        case "apns": return try APNsProvider(config: section(config.apns, "apns"), context: context)
        case "fcm": return try FCMProvider(config: section(config.fcm, "fcm"), context: context)
        case "wns": return try WNSProvider(config: section(config.wns, "wns"), context: context)
        case "webpush": return try WebPushProvider(config: section(config.webpush, "webpush"), context: context)
        case "azure":
            return try AzureHubProvider(config: section(config.azure, "azure", routed: "to \"azure\" (connection_string and hub are required)"),
                                        context: context)
        default:
            throw ProviderSetupError(["routes: provider \"\(name)\" is not available in this build"])
        }
    }

    /// The provider's config section, which routes need: missing is a setup problem naming it.
    private static func section<Section>(_ value: Section?, _ name: String, routed: String? = nil) throws -> Section {
        guard let value else {
            throw ProviderSetupError(["providers.\(name): missing, but routes send \(routed ?? "a platform to \(name)")"])
        }
        return value
    }
}
