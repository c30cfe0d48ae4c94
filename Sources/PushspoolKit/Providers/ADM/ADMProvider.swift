import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization

/// Amazon Device Messaging (`adm`), for Fire tablets and Fire TV.
///
/// One POST per device to `/messaging/registrations/<registration id>/messages`. A `200` naming
/// another `registrationID` is the device's canonical id: the result carries it
/// (`ProviderResult.canonicalHandle`) and the engine replaces the handle in the registry. A
/// `429` or `503` retries that device only, after its `Retry-After`. The access token is an
/// OAuth client-credentials token (scope `messaging:push`), shared by every worker and every
/// process on the spool.
public final class ADMProvider: PushProvider, TokenCheck {
    public let name = "adm"
    private let http: any HTTPClient
    private let tokens: AccessTokenSource
    private let base: String
    private let closed = Atomic<Bool>(false)

    public static let typeVersion = "com.amazon.device.messaging.ADMMessage@1.0"
    public static let acceptType = "com.amazon.device.messaging.ADMSendResult@1.0"

    public init(config: ADMConfig, context: ProviderContext) throws {
        let client = try OAuthClientCredentials(service: "adm", clientID: config.clientID, secret: config.clientSecret,
                                                endpoint: config.endpoint ?? ADMConfig.defaultEndpoint,
                                                tokenURL: config.tokenEndpoint ?? ADMConfig.defaultTokenEndpoint,
                                                extra: [("scope", "messaging:push")], context: context)
        http = client.http
        tokens = client.tokens
        base = client.endpoint
    }

    /// Ready once the OAuth access token is held (or its fetch failed).
    public func whenReady(_ ready: @escaping @Sendable () -> Void) { tokens.token { _ in ready() } }

    public func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        guard let (device, notification) = SendOpening.device(request, provider: "adm", isShutDown: closed.load(ordering: .acquiring),
                                                              own: { if case .adm(let n) = $0 { n } else { nil } },
                                                              completion: completion) else { return }
        guard notification.dataBytes <= ADMNotification.maxDataBytes else {
            completion(ProviderResult(.rejected, code: "payload-too-large",
                                      reason: "data is \(notification.dataBytes) bytes, ADM allows \(ADMNotification.maxDataBytes)"))
            return
        }
        // The handle goes into the URL's path: one that could leave its segment is never sent.
        if let problem = Platform.adm.handleProblem(device.handle) {
            completion(ProviderResult(.deviceGone(since: nil), code: "local", reason: "InvalidRegistrationId: \(problem)"))
            return
        }
        let url = base + "/messaging/registrations/\(device.handle)/messages"
        let body = notification.body, sent = device.handle
        tokens.execute({ bearer in Self.request(url: url, bearer: bearer, body: body) },
                       on: http, classify: { Self.classify($0, sent: sent) }, completion: completion)
    }

    public func tokenProblem() -> String? { tokens.problemFetching(name) }

    public func shutdown() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        http.shutdown()
    }

    /// The send request for one device (pure, so tests compare it exactly).
    static func request(url: String, bearer: String, body: [UInt8]) -> HTTPRequest {
        HTTPRequest(method: "POST", url: url,
                    headers: [("Authorization", "Bearer \(bearer)"),
                              ("Content-Type", "application/json"),
                              ("Accept", "application/json"),
                              ("X-Amzn-Type-Version", typeVersion),
                              ("X-Amzn-Accept-Type", acceptType)],
                    body: body, timeout: 30)
    }

    static func classify(_ outcome: Result<HTTPResponse, HTTPTransportError>, sent: String, now: Date = Date()) -> ProviderResult {
        switch outcome {
        case .failure(let e):
            // The send URL is configuration: a permanent failure there pauses the provider.
            return SendOpening.transportFailure(e, endpoint: .configured)
        case .success(let response):
            let json = try? JSONParser.parse(response.body)
            let reason = json?["reason"]?.stringValue
            let disposition = ADMClassifier.disposition(status: response.status, reason: reason,
                                                        retryAfter: response[header: "retry-after"].flatMap { RetryAfter.seconds($0, now: now) })
            let canonical = response.status == 200 ? ADMClassifier.canonicalID(sent: sent, answered: json?["registrationID"]?.stringValue) : nil
            var result = ProviderResult(disposition, code: String(response.status),
                                        reason: reason.map { TerminalText.escaped(String($0.prefix(200))) },
                                        canonicalHandle: canonical.flatMap { Platform.adm.handleProblem($0) == nil ? $0 : nil })
            // ADM throttles per registration id: its Retry-After holds back that device only.
            result.waitIsTargets = true
            return result
        }
    }
}
