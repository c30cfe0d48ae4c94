import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization

/// Windows Push Notification Services (`wns`).
///
/// One POST per device to its channel URI, which must pass the `allowed_hosts` check first (a
/// registry handle must never make pushspool hand its bearer token to another host). The access
/// token is an OAuth client-credentials token from `token_endpoint`, shared by every worker and
/// every process on the spool.
public final class WNSProvider: PushProvider {
    public let name = "wns"
    private let http: any HTTPClient
    private let tokens: AccessTokenSource
    private let channels: WNSChannelPolicy
    private let closed = Atomic<Bool>(false)

    /// Classic (UWP/Store) token endpoint and scope, for `auth: "package"`.
    public static let defaultTokenEndpoint = "https://login.live.com/accesstoken.srf"
    public static let defaultScope = "notify.windows.com"
    /// Windows App SDK apps (`auth: "entra"`): the tenant's v2.0 token endpoint and WNS's scope.
    public static func entraTokenEndpoint(tenant: String) -> String {
        "https://login.microsoftonline.com/\(tenant)/oauth2/v2.0/token"
    }
    public static let entraScope = "https://wns.windows.com/.default"
    /// Entra-authenticated (Windows App SDK) apps take toast and raw only (Microsoft's migration guide).
    private let toastAndRawOnly: Bool

    public init(config: WNSConfig, context: ProviderContext) throws {
        var problems: [String] = []
        if config.clientID.isEmpty { problems.append("providers.wns.client_id: missing") }
        if config.clientSecret.value.isEmpty { problems.append("providers.wns.client_secret: missing or empty") }
        let entra = config.auth == .entra
        if entra, config.tenantID.map(Self.isValidTenant) != true {
            problems.append("providers.wns.tenant_id: required with auth \"entra\" (the directory's id or domain: A-Z a-z 0-9 . -)")
        } else if !entra, config.tenantID != nil {
            problems.append("providers.wns.tenant_id: only with auth \"entra\"")
        }
        let tokenURL = config.tokenEndpoint
            ?? (entra ? Self.entraTokenEndpoint(tenant: config.tenantID ?? "") : Self.defaultTokenEndpoint)
        if let p = ProviderSetupChecks.httpsURLProblem(tokenURL, field: "providers.wns.token_endpoint") { problems.append(p) }
        let scope = config.scope ?? (entra ? Self.entraScope : Self.defaultScope)
        if scope.isEmpty { problems.append("providers.wns.scope: empty") }
        problems += WNSChannelPolicy.configProblems(config.allowedHosts)
        guard problems.isEmpty else { throw ProviderSetupError(problems) }

        // WNS speaks HTTP/1.1 without pipelining: one request per connection at a time, so one
        // connection per host would serialise every channel on the same WNS node.
        var options = HTTPClientOptions(versions: .http1)   // the context adds tls.ca_file
        options.maxConnectionsPerHost = context.config.maxConnections(for: "wns")
        // Channels are checked by address too; the token endpoint is the operator's own setting.
        let channels = WNSChannelPolicy(allowedHosts: config.allowedHosts)
        options.addressGuard = channels.addressGuard(alsoExempt: Set([URLComponents(string: tokenURL)?.host?.lowercased()].compactMap { $0 }))
        let http = try context.makeHTTPClient(options)
        let cache = context.credentials
        let endpoint = OAuthTokenEndpoint(url: tokenURL, label: "wns")
        let form = [("grant_type", "client_credentials"), ("client_id", config.clientID),
                    ("client_secret", config.clientSecret.value), ("scope", scope)]
        let log = context.log
        self.http = http
        self.channels = channels
        self.toastAndRawOnly = entra
        self.tokens = AccessTokenSource(key: "wns-\(config.clientID)", cache: cache) {
            let now = cache.now
            let result = endpoint.fetch(form: form, using: http, now: now)
            if case .success(let c) = result {
                log.debug("wns: new access token, valid \(Int(c.expiresAt.timeIntervalSince(now))) s")
            }
            return result
        }
    }


    /// Ready once the OAuth access token is held (or its fetch failed).
    public func whenReady(_ ready: @escaping @Sendable () -> Void) { tokens.token { _ in ready() } }
    public func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        guard let (device, notification) = SendOpening.device(request, provider: "wns", isShutDown: closed.load(ordering: .acquiring),
                                                              own: { if case .wns(let n) = $0 { n } else { nil } },
                                                              completion: completion) else { return }
        // The allow-list comes before everything else, the token fetch included: no request at all.
        if case .denied(let reason) = channels.check(device.handle) {
            completion(ProviderResult(.rejected, code: "host-not-allowed", reason: reason))
            return
        }
        if toastAndRawOnly && (notification.type == "wns/tile" || notification.type == "wns/badge") {
            completion(ProviderResult(.rejected, code: "local",
                                      reason: "\(notification.type) is not available to Windows App SDK apps (auth entra): toast and raw only"))
            return
        }
        guard notification.bodyCount <= WNSNotification.maxPayloadBytes else {
            completion(ProviderResult(.rejected, code: "payload-too-large",
                                      reason: "payload is \(notification.bodyCount) bytes, WNS allows \(WNSNotification.maxPayloadBytes)"))
            return
        }
        let channel = (try? channels.asciiURI(device.handle).get()) ?? device.handle   // checked above
        tokens.execute({ bearer in Self.request(channel: channel, bearer: bearer, notification: notification) },
                       on: http, classify: Self.classify, completion: completion)
    }

    /// A tenant id (a GUID) or domain goes into the token URL's path: letters, digits, dots, dashes.
    static func isValidTenant(_ tenant: String) -> Bool {
        !tenant.isEmpty && tenant.utf8.count <= 256 && tenant.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == UInt8(ascii: ".") || b == UInt8(ascii: "-")
        }
    }

    public func shutdown() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        http.shutdown()
    }

    /// The channel POST for one device (pure, so tests compare it exactly).
    static func request(channel: String, bearer: String, notification n: WNSNotification) -> HTTPRequest {
        var headers = [("Authorization", "Bearer \(bearer)"),
                       ("Content-Type", n.contentType),
                       ("X-WNS-Type", n.type)]
        if let ttl = n.ttlSeconds { headers.append(("X-WNS-TTL", String(ttl))) }
        if let tag = n.tag { headers.append(("X-WNS-Tag", tag)) }
        return HTTPRequest(method: "POST", url: channel, headers: headers, body: n.body, timeout: 30)
    }

    static func classify(_ outcome: Result<HTTPResponse, HTTPTransportError>) -> ProviderResult {
        switch outcome {
        case .success(let response):
            return WNSResponse(response).result
        case .failure(let e):
            // The channel URI is the device's own: a permanent failure there refuses that target only.
            return SendOpening.transportFailure(e, endpoint: .perDevice)
        }
    }
}
