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
    /// The Instance ID service (`iid_endpoint`), for topic subscriptions.
    private let iidEndpoint: String
    private let log: Log
    private let closed = Atomic<Bool>(false)

    public static let defaultEndpoint = "https://fcm.googleapis.com"
    public static let defaultIIDEndpoint = "https://iid.googleapis.com"

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
        let iid = config.iidEndpoint ?? Self.defaultIIDEndpoint
        if let p = ProviderSetupChecks.httpsURLProblem(iid, field: "providers.fcm.iid_endpoint") { problems.append(p) }
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
        self.iidEndpoint = iid
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


    /// Ready once the OAuth access token is held (or its fetch failed).
    public func whenReady(_ ready: @escaping @Sendable () -> Void) { tokens.token { _ in ready() } }
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
        let size = notification.envelopeBytes
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

    /// (Un)subscribes `tokens` (at most `FCMTopicBatch.maxTokens`) to `topic` in one Instance ID
    /// batch request, retried by `policy` while the service answers 429 or 5xx (and a token it
    /// answers `INTERNAL` is asked again in the next attempt). Returns each token's final error
    /// (nil: done), in order; a request that failed for good (`failure`) gives every token left its reason.
    public func topicBatch(_ action: FCMTopicBatch.Action, topic: String, tokens: [String], policy: RetryPolicy,
                           isStopping: () -> Bool = { false }) -> (errors: [String?], requests: Int, failure: String?) {
        var errors = [String?](repeating: nil, count: tokens.count)
        var pending = Array(tokens.indices)
        var attempt = 1, requests = 0
        var previous: Disposition?
        let url = FCMTopicBatch.url(endpoint: iidEndpoint, action)
        while !pending.isEmpty {
            let body = FCMTopicBatch.body(topic: topic, tokens: pending.map { tokens[$0] })
            requests += 1
            let result: ProviderResult
            switch iidRequest(url, body: body, count: pending.count) {
            case .results(let answers)?:
                var again: [Int] = []
                for (i, error) in zip(pending, answers) {
                    errors[i] = error
                    if let error, FCMTopicBatch.isTransient(error) { again.append(i) }
                }
                guard !again.isEmpty, attempt < policy.maxAttempts, !isStopping() else { return (errors, requests, nil) }
                pending = again
                result = ProviderResult(.retry(after: nil))
            case .failed(let r)?: result = r
            case nil: result = ProviderResult(.retry(after: nil), code: "transport")
            }
            switch policy.decide(result.disposition, attempt: attempt, previous: previous, random: { Double.random(in: 0..<1) }) {
            // The wait for the retry is part of the question: a stop that rings meanwhile ends
            // the batch as a stop before it does.
            case .retry(let after) where !isStopping()
                && (after <= 0 || StopBell.shared.sleep(until: DispatchTime.now() + after, halted: isStopping)):
                attempt += 1
                previous = result.disposition
            default:
                var reason = [result.code, result.reason].compactMap { $0 }.joined(separator: " ")
                if reason.isEmpty { reason = "failed" }
                for i in pending where errors[i] == nil || FCMTopicBatch.isTransient(errors[i]!) { errors[i] = reason }
                return (errors, requests, reason)
            }
        }
        return (errors, requests, nil)
    }

    /// One Instance ID request with a current access token, waited for.
    private func iidRequest(_ url: String, body: [UInt8], count: Int) -> FCMTopicBatch.Answer? {
        final class Box: Sendable { let answer = Mutex<FCMTopicBatch.Answer?>(nil) }
        let box = Box(), done = DispatchSemaphore(value: 0)
        tokens.execute({ bearer in FCMTopicBatch.request(url: url, bearer: bearer, body: body) }, on: http, classify: { outcome in
            let parsed = FCMTopicBatch.answer(outcome, count: count)
            box.answer.withLock { $0 = parsed }
            if case .failed(let r) = parsed { return r }
            return ProviderResult(.delivered, code: "200")
        }, completion: { r in
            // A token that could not be had never reached `classify`.
            box.answer.withLock { a in if a == nil { a = FCMTopicBatch.Answer.failed(r) } }
            done.signal()
        })
        done.wait()
        return box.answer.withLock { $0 }
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
