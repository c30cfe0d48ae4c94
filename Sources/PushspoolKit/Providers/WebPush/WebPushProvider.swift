import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization

/// Web Push (`webpush`): RFC 8030 push messages to browsers' push services.
///
/// Per device: the endpoint passes the `allowed_hosts` check (before anything else: no request
/// for a subscription outside it), the rendered JSON is encrypted for the subscription's keys
/// (RFC 8291, a fresh ephemeral key per message) and POSTed with the VAPID authorization of the
/// endpoint's origin (RFC 8292) and the `TTL`/`Urgency`/`Topic` headers.
public final class WebPushProvider: PushProvider {
    public let name = "webpush"
    private let http: any HTTPClient
    private let vapid: VAPIDTokenSource
    private let endpoints: WebPushEndpointPolicy
    private let credentials: CredentialCache
    private let declarative: WebPushConfig.Declarative
    private let closed = Atomic<Bool>(false)

    public init(config: WebPushConfig, context: ProviderContext) throws {
        let key = try WebPushSetup.validate(config, context: context)
        // Each push service is one origin; HTTP/2 where it offers it (FCM, Mozilla), else 1.1.
        var options = HTTPClientOptions(versions: .http2Preferred)   // the context adds tls.ca_file
        options.maxConnectionsPerHost = context.config.maxConnections(for: "webpush")
        endpoints = WebPushEndpointPolicy(allowedHosts: config.allowedHosts)
        options.addressGuard = endpoints.addressGuard
        http = try context.makeHTTPClient(options)
        vapid = VAPIDTokenSource(key: key, subject: config.subject, cache: context.credentials)
        credentials = context.credentials
        declarative = config.declarative
    }

    /// Apple's push service (Safari, iOS 18.4+ and macOS 15.5+) is where `auto` sends the
    /// declarative form: the others hand every message to the page's service worker.
    static func wantsDeclarative(_ mode: WebPushConfig.Declarative, endpointHost host: String) -> Bool {
        switch mode {
        case .always: return true
        case .never: return false
        case .auto:
            let h = host.lowercased()
            return h == "push.apple.com" || h.hasSuffix(".push.apple.com")
        }
    }

    /// The VAPID public key (base64url), what pages pass as `applicationServerKey`.
    public var publicKey: String { vapid.publicKey }

    public func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        guard let (device, notification) = SendOpening.device(request, provider: "webpush", isShutDown: closed.load(ordering: .acquiring),
                                                              own: { if case .web(let n) = $0 { n } else { nil } },
                                                              completion: completion) else { return }
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription.parse(text: device.handle)
        } catch {
            // Only a registry written by something else could hold this: the subscription is unusable.
            completion(ProviderResult(.deviceGone(since: nil), code: "invalid-subscription", reason: error.description))
            return
        }
        // The allow-list comes first: a subscription outside it never causes a request.
        if let why = endpoints.denial(subscription.endpoint) {
            completion(ProviderResult(.rejected, code: "host-not-allowed", reason: why))
            return
        }
        let origin = subscription.origin
        let httpRequest: HTTPRequest
        let token: String
        do {
            token = try vapid.token(origin: origin)
            let host = URLComponents(string: subscription.endpoint)?.host ?? ""
            let plaintext = notification.declarativePayload.flatMap { Self.wantsDeclarative(declarative, endpointHost: host) ? $0 : nil }
                ?? notification.payload
            let body = try WebPushEncryption.encrypt(plaintext, p256dh: subscription.p256dh, auth: subscription.auth)
            httpRequest = Self.request(endpoint: subscription.endpoint, authorization: vapid.authorization(token: token),
                                       notification: notification, body: body)
        } catch {
            completion(ProviderResult(.rejected, code: "crypto", reason: "cannot encrypt or sign: \(error)"))
            return
        }
        let vapid = vapid, credentials = credentials
        http.execute(httpRequest) { outcome in
            let result = Self.classify(outcome, now: credentials.now)
            if result.disposition == .credentialsBroken { vapid.invalidate(origin: origin, token: token) }
            completion(result)
        }
    }

    public func shutdown() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        http.shutdown()
    }

    /// The push POST for one subscription (pure, so tests compare it exactly).
    static func request(endpoint: String, authorization: String, notification n: WebPushNotification,
                        body: [UInt8]) -> HTTPRequest {
        var headers = [("Authorization", authorization),
                       ("Content-Encoding", "aes128gcm"),
                       ("Content-Type", "application/octet-stream"),
                       ("TTL", String(n.ttlSeconds)),
                       ("Urgency", n.urgency)]
        if let topic = n.topic { headers.append(("Topic", topic)) }
        return HTTPRequest(method: "POST", url: endpoint, headers: headers, body: body, timeout: 30,
                           unindexedHeaders: [":path"])
    }

    static func classify(_ outcome: Result<HTTPResponse, HTTPTransportError>, now: Date = Date()) -> ProviderResult {
        switch outcome {
        case .success(let response):
            return WebPushResponse(response, now: now).result
        case .failure(let e):
            // The push service is the subscription's own: a permanent failure there refuses that target only.
            return SendOpening.transportFailure(e, endpoint: .perDevice)
        }
    }
}
