import Foundation
import PushspoolCore

/// What a provider may use: the effective config, the shared credential cache (backed by the
/// spool's `.state/`), the log, and a way to make HTTP clients.
public struct ProviderContext: Sendable {
    public var config: Config
    public var credentials: CredentialCache
    public var log: Log
    /// Makes an HTTP client that trusts the system roots plus `tls.ca_file`.
    public var makeHTTPClient: @Sendable (HTTPClientOptions) -> any HTTPClient

    public init(config: Config, credentials: CredentialCache, log: Log,
                makeHTTPClient: @escaping @Sendable (HTTPClientOptions) -> any HTTPClient) {
        self.config = config
        self.credentials = credentials
        self.log = log
        self.makeHTTPClient = makeHTTPClient
    }
}

public struct HTTPClientOptions: Sendable {
    /// Extra trusted CA certificates (PEM), added to the system roots.
    public var extraCAPEM: String?
    /// Prefer HTTP/2 (APNs requires it); otherwise let ALPN decide (WNS is HTTP/1.1).
    public var requireHTTP2: Bool = false
    /// Concurrent streams per connection (the server's SETTINGS may lower it).
    public var maxConcurrentStreams: Int = 1000
    /// Open a fresh connection after this many streams (libcurl 7.88.1 resets every finished
    /// stream; servers with rapid-reset protection send GOAWAY after ~1000). nil: never.
    public var maxStreamsPerConnection: Int? = 900
    /// Connections per host.
    public var maxConnectionsPerHost: Int = 1

    public init(extraCAPEM: String? = nil, requireHTTP2: Bool = false) {
        self.extraCAPEM = extraCAPEM
        self.requireHTTP2 = requireHTTP2
    }
}
