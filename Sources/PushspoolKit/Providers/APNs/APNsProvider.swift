import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization

/// Apple Push Notification service, token (`.p8`) auth over one multiplexed HTTP/2 connection.
///
/// Per attempt: take the shared JWT, build the request (refusing locally what Apple would refuse
/// for sure), send it, classify Apple's answer with `APNsClassifier`. Retries, registry pruning
/// and pausing are the engine's; the one thing done here is dropping a JWT Apple calls expired,
/// so the engine's immediate retry carries a fresh one.
public final class APNsProvider: PushProvider {
    public let name = "apns"
    let client: any HTTPClient
    let tokens: APNsTokenSource
    let builder: APNsRequestBuilder
    private let clock: @Sendable () -> Date
    private let log: Log
    private let bearer = Mutex<(jwt: String, header: String)>(("", ""))

    /// Validates the whole section at once and throws a `ProviderSetupError` listing every problem
    /// (the CLI reports it once and exits 78).
    public convenience init(config: APNsConfig, context: ProviderContext) throws {
        let setup = try APNsSetup.validate(config, context: context)
        var options = HTTPClientOptions(versions: .http2Only)   // the context adds tls.ca_file
        options.maxConnectionsPerHost = context.config.maxConnections(for: "apns")
        self.init(tokens: APNsTokenSource(teamID: config.teamID, keyID: config.keyID, key: setup.key,
                                          cache: context.credentials),
                  builder: APNsRequestBuilder(baseURL: config.baseURL, topic: config.topic),
                  client: try context.makeHTTPClient(options),
                  clock: { context.credentials.now }, log: context.log)
    }

    init(tokens: APNsTokenSource, builder: APNsRequestBuilder, client: any HTTPClient,
         clock: @escaping @Sendable () -> Date, log: Log) {
        self.tokens = tokens
        self.builder = builder
        self.client = client
        self.clock = clock
        self.log = log
    }

    public func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
        guard case .device(let device) = request.recipient, case .apns(let notification) = request.notification else {
            completion(ProviderResult(.rejected, code: "local", reason: "not an APNs device notification"))
            return
        }
        let jwt: String
        do {
            jwt = try tokens.current()
        } catch {
            // The key loaded at start-up but cannot sign: nothing will work until it is fixed.
            completion(ProviderResult(.credentialsBroken, code: "local", reason: "cannot sign the provider token: \(error)"))
            return
        }
        let apnsID = Self.apnsID(jobID: request.jobID, deviceID: device.id)
        let now = Int(clock().timeIntervalSince1970)
        switch builder.build(deviceToken: device.handle, notification: notification, jwt: jwt, authorization: authorization(jwt),
                             apnsID: apnsID, now: now) {
        case .failure(let refusal):
            completion(ProviderResult(refusal.disposition, code: "local", reason: refusal.reason))
        case .success(let http):
            client.execute(http) { [self] result in
                completion(classify(result, jwt: jwt, apnsID: apnsID))
            }
        }
    }

    public func shutdown() { client.shutdown() }

    /// `bearer <jwt>`, made once per token: every request for the token's 50 minutes sends the
    /// same string (compared by identity first, so the check costs no copy).
    private func authorization(_ jwt: String) -> String {
        bearer.withLock { b in
            if b.jwt != jwt { b = (jwt, "bearer " + jwt) }
            return b.header
        }
    }

    func classify(_ result: Result<HTTPResponse, HTTPTransportError>, jwt: String, apnsID: String) -> ProviderResult {
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
        let disposition = APNsClassifier.disposition(status: response.status, reason: reason,
                                                     timestamp: timestamp, retryAfter: retryAfter)
        // The answer condemns this connection (Shutdown, IdleTimeout, UnrelatedKeyIdInToken):
        // later requests, this one's retry included, go on a new one.
        if disposition == .reconnect { client.condemnConnections() }
        if disposition == .refreshCredentials, !tokens.invalidate(jwt) {
            log.warning("apns: Apple refused a provider token under 20 minutes old (\(reason?.rawValue ?? "403")); keeping it, as Apple allows one new token per 20 minutes — check the clock, team id and key id")
        }
        return ProviderResult(disposition, code: String(response.status),
                              reason: reason?.rawValue ?? "HTTP \(response.status)", providerID: id)
    }

    /// A lowercase UUID derived from the job and the device, so every attempt of one notification
    /// carries the same `apns-id` (Apple echoes it; the result log records it), a resend after a
    /// crash included.
    static func apnsID(jobID: String, deviceID: String) -> String {
        StableUUID.make(jobID, deviceID)
    }
}
