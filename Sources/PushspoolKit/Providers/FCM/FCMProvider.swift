import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization

/// Firebase Cloud Messaging, HTTP v1 (`fcm`; `gcm` is its retired name and routes here).
///
/// One `messages:send` POST per device: the renderer's target-less `message` plus the device's
/// registration token. The OAuth access token comes from the service account (RS256 JWT bearer
/// grant to its `token_uri`) and is shared by every worker and every process on the spool.
public final class FCMProvider: PushProvider {
    public let name = "fcm"
    private let http: any HTTPClient
    private let tokens: AccessTokenSource
    private let sendURL: String
    private let log: Log
    private let closed = Atomic<Bool>(false)

    public static let defaultEndpoint = "https://fcm.googleapis.com"

    /// Validates the config and the service-account file, reporting every problem at once.
    public init(config: FCMConfig, context: ProviderContext) throws {
        var problems: [String] = []
        let account: ServiceAccount?
        if config.serviceAccountFile.isEmpty {
            problems.append("providers.fcm.service_account_file: missing")
            account = nil
        } else {
            switch ServiceAccount.load(context.config.resolve(config.serviceAccountFile)) {
            case .success(let a): account = a
            case .failure(let e): problems += e.problems; account = nil
            }
        }
        let endpoint = config.endpoint ?? Self.defaultEndpoint
        if let p = ProviderSetupChecks.httpsURLProblem(endpoint, field: "providers.fcm.endpoint") { problems.append(p) }
        guard problems.isEmpty, let account else { throw ProviderSetupError(problems) }

        var options = HTTPClientOptions()   // the context adds tls.ca_file
        options.maxConnectionsPerHost = context.config.maxConnections(for: "fcm")
        let http = try context.makeHTTPClient(options)
        let cache = context.credentials
        let tokenEndpoint = OAuthTokenEndpoint(url: account.tokenURI, label: "fcm")
        let log = context.log
        self.http = http
        self.log = log
        self.sendURL = Self.trimmingSlash(endpoint) + "/v1/projects/\(account.projectID)/messages:send"
        self.tokens = AccessTokenSource(key: "fcm-\(account.clientEmail)", cache: cache) {
            let now = cache.now
            let assertion: String
            do {
                assertion = try account.assertion(now: now)
            } catch {
                return .failure(AccessTokenError(.refused, code: "sign", reason: "fcm cannot sign the token assertion: \(error)"))
            }
            let result = tokenEndpoint.fetch(form: [("grant_type", ServiceAccount.grantType), ("assertion", assertion)],
                                             using: http, now: now)
            if case .success(let c) = result {
                log.debug("fcm: new access token for \(account.clientEmail), valid \(Int(c.expiresAt.timeIntervalSince(now))) s")
            }
            return result
        }
    }

    public func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        if case .hub(let audience) = request.recipient, let (field, value) = audience.serviceTarget,
           case .fcm(let notification) = request.notification, !closed.load(ordering: .acquiring) {
            sendToService(notification, field: field, value: value, completion: completion)
            return
        }
        guard let (device, notification) = SendOpening.device(request, provider: "fcm", isShutDown: closed.load(ordering: .acquiring),
                                                              own: { if case .fcm(let n) = $0 { n } else { nil } },
                                                              completion: completion) else { return }
        // FCM counts the message's keys and values, not the target: check before any request.
        let size = JSONValue.object([("message", notification.message)]).encoded().count
        guard size <= FCMNotification.maxMessageBytes else {
            completion(ProviderResult(.rejected, code: "payload-too-large",
                                      reason: "message is \(size) bytes, FCM allows \(FCMNotification.maxMessageBytes)"))
            return
        }
        let body = notification.body(token: device.handle)
        tokens.execute({ [sendURL] bearer in Self.request(url: sendURL, bearer: bearer, body: body) },
                       on: http, classify: Self.classify, completion: completion)
    }

    /// One request for a whole topic or condition (`message.topic` / `message.condition`). No
    /// device is behind it, so an answer about the target refuses this send, it removes nothing.
    private func sendToService(_ notification: FCMNotification, field: String, value: String,
                               completion: @escaping @Sendable (ProviderResult) -> Void) {
        let body = notification.body(target: field, value)
        tokens.execute({ [sendURL] bearer in Self.request(url: sendURL, bearer: bearer, body: body) },
                       on: http, classify: { outcome in
            var result = Self.classify(outcome)
            if case .deviceGone = result.disposition { result.disposition = .rejected }
            return result
        }, completion: completion)
    }

    public func shutdown() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        http.shutdown()
    }

    /// The `messages:send` request for one device (pure, so tests compare it byte for byte).
    static func request(url: String, bearer: String, body: [UInt8]) -> HTTPRequest {
        HTTPRequest(method: "POST", url: url,
                    headers: [("Authorization", "Bearer \(bearer)"),
                              ("Content-Type", "application/json; charset=utf-8")],
                    body: body, timeout: 30)
    }

    static func classify(_ outcome: Result<HTTPResponse, HTTPTransportError>) -> ProviderResult {
        switch outcome {
        case .success(let response):
            return FCMResponse(response).result
        case .failure(let e):
            // FCM's send URL is configuration: a permanent failure there pauses the provider.
            return SendOpening.transportFailure(e, endpoint: .configured)
        }
    }

    static func trimmingSlash(_ s: String) -> String {
        var s = s
        while s.hasSuffix("/") { s.removeLast() }
        return s
    }
}
