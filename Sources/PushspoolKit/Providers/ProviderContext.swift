import Foundation
import PushspoolCore
import PushspoolHTTP

/// What a provider may use: the effective config, the shared credential cache (backed by the
/// spool's `.state/`), the log, and a way to make HTTP clients.
public struct ProviderContext: Sendable {
    public var config: Config
    public var credentials: CredentialCache
    public var log: Log
    /// Makes an HTTP client that trusts the system roots plus `tls.ca_file`; throws (a
    /// `ProviderSetupError` naming the field) when the transport cannot be built.
    public var makeHTTPClient: @Sendable (HTTPClientOptions) throws -> any HTTPClient

    public init(config: Config, credentials: CredentialCache, log: Log,
                makeHTTPClient: @escaping @Sendable (HTTPClientOptions) throws -> any HTTPClient) {
        self.config = config
        self.credentials = credentials
        self.log = log
        self.makeHTTPClient = makeHTTPClient
    }
}
