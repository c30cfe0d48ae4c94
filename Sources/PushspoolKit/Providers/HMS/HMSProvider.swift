import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization

/// Huawei Push Kit (`hms`), for Android phones without Google services.
///
/// Pushes of one message share a `messages:send` request, up to 1,000 tokens: a send job's
/// producer fills the batches (`BatchingProvider`, one worker-pool slot per request), and pushes
/// handed over one at a time (retries) are gathered by a short window (`HMSBatches`); each token
/// keeps its own answer, so the engine records, retries and prunes each device as it does
/// for the one-device providers, and releases a device's slot only once its line is written:
/// after a crash, only the tokens of requests in flight are sent again. A partial answer
/// (`80100000`) fails exactly the tokens it names; the others are delivered (`HMSClassifier`).
/// The access token is an OAuth client-credentials token, shared by every worker and every
/// process on the spool.
public final class HMSProvider: BatchingProvider, TokenCheck {
    public let name = "hms"
    private let http: any HTTPClient
    private let tokens: AccessTokenSource
    private let sendURL: String
    private let closed = Atomic<Bool>(false)
    private let batches: Mutex<HMSBatches?> = Mutex(nil)

    public init(config: HMSConfig, context: ProviderContext) throws {
        var problems: [String] = []
        if config.appID.isEmpty { problems.append("providers.hms.app_id: missing (the app's id in AppGallery Connect)") }
        if !config.appID.isEmpty, !config.appID.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }) {
            problems.append("providers.hms.app_id: \"\(OAuthTokenEndpoint.clip(config.appID))\" is not an app id (letters, digits, - and _)")
        }
        let client = try OAuthClientCredentials(service: "hms", clientID: config.clientID, secret: config.clientSecret,
                                                endpoint: config.endpoint ?? HMSConfig.defaultEndpoint,
                                                tokenURL: config.tokenEndpoint ?? HMSConfig.defaultTokenEndpoint, problems: problems, context: context)
        http = client.http
        tokens = client.tokens
        sendURL = client.endpoint + "/v1/\(config.appID)/messages:send"
        let batches = HMSBatches { [weak self] batch in self?.send(batch) }
        self.batches.withLock { $0 = batches }
    }

    /// Ready once the OAuth access token is held (or its fetch failed).
    public func whenReady(_ ready: @escaping @Sendable () -> Void) { tokens.token { _ in ready() } }

    public func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        guard let (device, notification) = opening(request, completion: completion) else { return }
        guard let batches = batches.withLock({ $0 }) else { return completion(SendOpening.shutDown("hms")) }
        batches.add(notification, token: device.handle, completion: completion)
    }

    /// The device and its message, or nil once `completion` has its refusal: Huawei counts the
    /// body without its tokens, checked before any request.
    private func opening(_ request: SendRequest, completion: (ProviderResult) -> Void) -> (Device, HMSNotification)? {
        guard let (device, notification) = SendOpening.device(request, provider: "hms", isShutDown: closed.load(ordering: .acquiring),
                                                              own: { if case .hms(let n) = $0 { n } else { nil } },
                                                              completion: completion) else { return nil }
        guard notification.bodyBytes <= HMSNotification.maxBodyBytes else {
            completion(ProviderResult(.rejected, code: "payload-too-large",
                                      reason: "message body is \(notification.bodyBytes) bytes without its tokens, HMS allows \(HMSNotification.maxBodyBytes)"))
            return nil
        }
        return (device, notification)
    }

    public var maxBatch: Int { HMSNotification.maxTokensPerRequest }

    /// Its message's bytes but the token, and its token; nil for a push `send` refuses.
    public func batchKey(_ request: SendRequest) -> BatchKey? {
        guard let (device, notification) = opening(request, completion: { _ in }) else { return nil }
        return BatchKey(message: notification.members.stamped(notification.id), member: device.handle)
    }

    public func send(batch requests: [SendRequest], answers: [@Sendable (ProviderResult) -> Void]) {
        guard case .hms(let notification)? = requests.first?.notification else { return }
        var batch = HMSBatches.Batch(notification: notification)
        for (request, answer) in zip(requests, answers) {
            guard case .device(let device) = request.recipient else { continue }
            batch.entries.append(HMSBatches.Entry(token: device.handle, completion: answer))
        }
        send(batch)
    }

    public func tokenProblem() -> String? { tokens.problemFetching(name) }

    /// One request for a batch; every token of it answered by the one answer (`HMSClassifier`).
    private func send(_ batch: HMSBatches.Batch) {
        guard !batch.entries.isEmpty else { return }
        let body = batch.notification.body(tokens: batch.entries.map(\.token))
        tokens.token { [self] result in
            switch result {
            case .failure(let e):
                for entry in batch.entries { entry.completion(e.result) }
            case .success(let bearer):
                http.execute(Self.request(url: sendURL, bearer: bearer, body: body)) { [self] outcome in
                    let answer = Self.classify(outcome)
                    if case .each(.refreshCredentials) = answer.verdict { tokens.invalidate(bearer) }
                    for entry in batch.entries { entry.completion(answer.result(for: entry.token)) }
                }
            }
        }
    }

    public func shutdown() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        batches.withLock { $0 }?.flush()
        http.shutdown()
        batches.withLock { $0 = nil }
    }

    /// The `messages:send` request (pure, so tests compare it exactly).
    static func request(url: String, bearer: String, body: [UInt8]) -> HTTPRequest {
        HTTPRequest(method: "POST", url: url,
                    headers: [("Authorization", "Bearer \(bearer)"), ("Content-Type", "application/json; charset=utf-8")],
                    body: body, timeout: 30)
    }

    static func classify(_ outcome: Result<HTTPResponse, HTTPTransportError>) -> HMSAnswer {
        switch outcome {
        case .success(let response):
            return HMSAnswer(response)
        case .failure(let e):
            // The send URL is configuration: a permanent failure there pauses the provider.
            return HMSAnswer(transport: SendOpening.transportFailure(e, endpoint: .configured))
        }
    }
}
