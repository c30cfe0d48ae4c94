import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization

/// Apple Push Notification service, token (`.p8`) auth over one multiplexed HTTP/2 connection.
///
/// One key serves every app of its team: each request carries its device's app's topic, and goes
/// to its device's environment's host (`api.push.apple.com`, `api.sandbox.push.apple.com`), each
/// host with its connections (opened when the first request for it goes out: a provider with no
/// development devices never connects to the sandbox). One JWT for all of it.
///
/// Per attempt: take the shared JWT, build the request (refusing locally what Apple would refuse
/// for sure), send it, classify Apple's answer with `APNsClassifier`. Retries, registry pruning
/// and pausing are the engine's; the one thing done here is dropping a JWT Apple calls expired,
/// so the engine's immediate retry carries a fresh one.
public final class APNsProvider: PushProvider {
    public let name = "apns"
    let client: any HTTPClient
    let tokens: APNsTokenSource
    /// The host of the provider's own `environment`, and of the other one.
    let builder: APNsRequestBuilder
    let otherBuilder: APNsRequestBuilder?
    let environment: APNsEnvironment
    /// The topic of each app routed here (empty: `builder.topic` for every device).
    let topics: [String: String]
    private let clock: @Sendable () -> Date
    private let log: Log
    private let bearer = Mutex<(jwt: String, header: String)>(("", ""))

    /// Validates the whole section at once and throws a `ProviderSetupError` listing every problem
    /// (the CLI reports it once and exits 78).
    public convenience init(config: APNsConfig, context: ProviderContext) throws {
        let setup = try APNsSetup.validate(config, context: context)
        var options = HTTPClientOptions(versions: .http2Only)   // the context adds tls.ca_file
        options.maxConnectionsPerHost = context.config.maxConnections(for: "apns")
        let own = config.apnsEnvironment, other: APNsEnvironment = own == .production ? .development : .production
        self.init(tokens: APNsTokenSource(teamID: config.teamID, keyID: config.keyID, key: setup.key,
                                          cache: context.credentials),
                  builder: APNsRequestBuilder(baseURL: config.baseURL(for: own), topic: config.topic),
                  client: try context.makeHTTPClient(options),
                  clock: { context.credentials.now }, log: context.log,
                  otherBuilder: APNsRequestBuilder(baseURL: config.baseURL(for: other), topic: config.topic),
                  environment: own, topics: config.topics)
    }

    init(tokens: APNsTokenSource, builder: APNsRequestBuilder, client: any HTTPClient,
         clock: @escaping @Sendable () -> Date, log: Log, otherBuilder: APNsRequestBuilder? = nil,
         environment: APNsEnvironment = .production, topics: [String: String] = [:]) {
        self.tokens = tokens
        self.builder = builder
        self.otherBuilder = otherBuilder
        self.environment = environment
        self.topics = topics
        self.client = client
        self.clock = clock
        self.log = log
    }

    public func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        if case .hub(.apnsChannel(let channel)) = request.recipient, case .apns(let notification) = request.notification {
            return broadcast(channel, notification, app: request.app, completion: completion)
        }
        guard case .device(let device) = request.recipient, case .apns(let notification) = request.notification else {
            completion(ProviderResult(.rejected, code: "local", reason: "not an APNs device notification"))
            return
        }
        guard let jwt = signed(completion) else { return }
        let apnsID = Self.apnsID(jobID: request.jobID, deviceID: device.id)
        let now = Int(clock().timeIntervalSince1970)
        let env = device.environment ?? environment
        let host = env == environment ? builder : otherBuilder ?? builder
        let topic = topics.isEmpty ? nil : topics[device.app]
        switch host.build(deviceToken: device.handle, notification: notification, jwt: jwt, authorization: authorization(jwt),
                          apnsID: apnsID, now: now, topic: topic) {
        case .failure(let refusal):
            completion(ProviderResult(refusal.disposition, code: "local", reason: refusal.reason))
        case .success(let http):
            // The answer's closure holds what classifying needs, not the whole device.
            let app = (id: device.app, topic: topic ?? builder.topic)
            client.execute(http) { [self] result in
                completion(classify(result, jwt: jwt, apnsID: apnsID, environment: env, app: app))
            }
        }
    }

    /// One broadcast to a channel of `app` (on the provider's own environment's host, where its
    /// channels are made). No device is behind it: an answer about the channel refuses this
    /// send and removes nothing. The result keeps Apple's `apns-request-id`.
    private func broadcast(_ channel: String, _ notification: APNsNotification, app: String?,
                           completion: @escaping @Sendable (ProviderResult) -> Void) {
        guard let jwt = signed(completion) else { return }
        let topic = app.flatMap { topics[$0] } ?? builder.topic
        switch builder.buildBroadcast(channelID: channel, notification: notification, authorization: authorization(jwt),
                                      now: Int(clock().timeIntervalSince1970), topic: topic) {
        case .failure(let refusal):
            completion(ProviderResult(refusal.disposition, code: "local", reason: refusal.reason))
        case .success(let http):
            client.execute(http) { [self] result in
                var outcome = classify(result, jwt: jwt, apnsID: "", app: (app ?? "", topic))
                if case .deviceGone = outcome.disposition { outcome.disposition = .rejected }
                if case .success(let response) = result { outcome.providerID = response[header: "apns-request-id"] ?? outcome.providerID }
                completion(outcome)
            }
        }
    }

    public func shutdown() { client.shutdown() }

    /// The shared JWT; nil (the send completed as `credentialsBroken`) when the key that loaded
    /// at start-up cannot sign: nothing will work until it is fixed.
    private func signed(_ completion: @Sendable (ProviderResult) -> Void) -> String? {
        do {
            return try tokens.current()
        } catch {
            completion(ProviderResult(.credentialsBroken, code: "local", reason: "cannot sign the provider token: \(error)"))
            return nil
        }
    }

    /// `bearer <jwt>`, made once per token: every request for the token's 50 minutes sends the
    /// same string (compared by identity first, so the check costs no copy).
    private func authorization(_ jwt: String) -> String {
        bearer.withLock { b in
            if b.jwt != jwt { b = (jwt, "bearer " + jwt) }
            return b.header
        }
    }

    /// `app`: the device's app and the topic it was sent with, named in an app-level refusal.
    func classify(_ result: Result<HTTPResponse, HTTPTransportError>, jwt: String, apnsID: String,
                  environment: APNsEnvironment = .production, app: (id: String, topic: String)? = nil) -> ProviderResult {
        let response: HTTPResponse
        switch result {
        case .failure(let error):
            log.debug("apns: no answer (\(error.message)); retrying")
            return ProviderResult(APNsClassifier.disposition(transport: error), code: "transport", reason: error.message)
        case .success(let r):
            response = r
        }
        let id = response[header: "apns-id"] ?? apnsID
        if response.status == 200 { return ProviderResult(.delivered, code: "200", providerID: id) }

        let body = try? JSONParser.parse(response.body)
        let reason = body?["reason"]?.stringValue.map(APNsReason.init)
        let timestamp: Double? = switch body?["timestamp"] {
        case .int(let v)?: Double(v)
        case .double(let v)?: v
        default: nil
        }
        let retryAfter = RetryAfter.seconds(response[header: "retry-after"])
        var disposition = APNsClassifier.disposition(status: response.status, reason: reason,
                                                     timestamp: timestamp, retryAfter: retryAfter)
        // The sandbox host refuses a production token as BadDeviceToken: a device registered in
        // the wrong environment, not a dead one. Never pruned on that.
        if environment == .development, reason == .badDeviceToken {
            disposition = .rejected
            return ProviderResult(disposition, code: String(response.status),
                                  reason: "BadDeviceToken from the sandbox host: not a development token (wrong environment?); the device is kept",
                                  providerID: id)
        }
        // The answer condemns this connection (Shutdown, IdleTimeout, UnrelatedKeyIdInToken):
        // later requests, this one's retry included, go on a new one.
        if disposition == .reconnect { client.condemnConnections() }
        if disposition == .refreshCredentials, !tokens.invalidate(jwt) {
            log.warning("apns: Apple refused a provider token under 20 minutes old (\(reason?.rawValue ?? "403")); keeping it, as Apple allows one new token per 20 minutes — check the clock, team id and key id")
        }
        var text = reason?.rawValue ?? "HTTP \(response.status)"
        // Refusals of the app (its topic), not of the device or the key: say whose.
        if let app, let reason, [.topicDisallowed, .badTopic, .deviceTokenNotForTopic].contains(reason) {
            text += " (app \(app.id), topic \(app.topic))"
        }
        return ProviderResult(disposition, code: String(response.status), reason: text, providerID: id)
    }

    /// A lowercase UUID derived from the job and the device, so every attempt of one notification
    /// carries the same `apns-id` (Apple echoes it; the result log records it), a resend after a
    /// crash included.
    static func apnsID(jobID: String, deviceID: String) -> String {
        StableUUID.make(jobID, deviceID)
    }
}
