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
        case "apns":
            guard let apns = config.apns else {
                throw ProviderSetupError(["providers.apns: missing, but routes send a platform to apns"])
            }
            return try APNsProvider(config: apns, context: context)
        case "fcm":
            guard let fcm = config.fcm else {
                throw ProviderSetupError(["providers.fcm: missing, but routes send a platform to fcm"])
            }
            return try FCMProvider(config: fcm, context: context)
        case "wns":
            guard let wns = config.wns else {
                throw ProviderSetupError(["providers.wns: missing, but routes send a platform to wns"])
            }
            return try WNSProvider(config: wns, context: context)
        case "webpush":
            guard let webpush = config.webpush else {
                throw ProviderSetupError(["providers.webpush: missing, but routes send a platform to webpush"])
            }
            return try WebPushProvider(config: webpush, context: context)
        case "azure":
            guard let azure = config.azure else {
                throw ProviderSetupError(["providers.azure: missing, but routes send to \"azure\" (connection_string and hub are required)"])
            }
            return try AzureHubProvider(config: azure, context: context)
        default:
            throw ProviderSetupError(["routes: provider \"\(name)\" is not available in this build"])
        }
    }
}
