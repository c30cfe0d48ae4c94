import Foundation
import PushspoolCore
import PushspoolHTTP

/// Apple's broadcast channel management API (iOS 18), for `pushspool apns channels`: the same
/// `.p8` key and JWT as sends, on `api-manage-broadcast[.sandbox].push.apple.com` (or the
/// provider's `channels_endpoint` / `sandbox_channels_endpoint`). Blocking calls: the CLI makes
/// one or a few. How each answer is handled: Providers.md, "Broadcast channels".
public final class APNsChannelClient: Sendable {
    let client: any HTTPClient
    let tokens: APNsTokenSource
    /// The management host of the provider's own environment.
    public let baseURL: String
    public let environment: APNsEnvironment

    /// A refusal or a failure, as one line for the person at the terminal.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public convenience init(config: APNsConfig, context: ProviderContext) throws {
        let setup = try APNsSetup.validate(config, context: context)
        var options = HTTPClientOptions(versions: .http2Only)
        options.maxConnectionsPerHost = 1
        self.init(tokens: APNsTokenSource(teamID: config.teamID, keyID: config.keyID, key: setup.key, cache: context.credentials),
                  client: try context.makeHTTPClient(options), baseURL: config.channelsURL(for: config.apnsEnvironment),
                  environment: config.apnsEnvironment)
    }

    init(tokens: APNsTokenSource, client: any HTTPClient, baseURL: String, environment: APNsEnvironment) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.tokens = tokens
        self.client = client
        self.baseURL = base
        self.environment = environment
    }

    public func shutdown() { client.shutdown() }

    /// `POST /1/apps/<bundle id>/channels` `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}`
    /// → 201 with the new channel's `apns-channel-id`.
    public func create(bundleID: String, storagePolicy: Int) throws(Failure) -> String {
        let body = JSONValue.object([("message-storage-policy", .int(Int64(storagePolicy))), ("push-type", .string("LiveActivity"))]).encoded()
        let response = try call("POST", "/1/apps/\(bundleID)/channels", body: body, expect: 201)
        guard let id = response[header: "apns-channel-id"], APNsChannelID.isValid(id) else {
            throw Failure(description: "Apple answered 201 without a usable apns-channel-id")
        }
        return id
    }

    /// `GET /1/apps/<bundle id>/all-channels` → 200 `{"channels": [...]}`.
    public func list(bundleID: String) throws(Failure) -> [String] {
        let response = try call("GET", "/1/apps/\(bundleID)/all-channels", expect: 200)
        guard case .array(let items)? = (try? JSONParser.parse(response.body))?["channels"] else {
            throw Failure(description: "Apple's channel list is not {\"channels\": [...]}")
        }
        return items.compactMap(\.stringValue)
    }

    /// `GET /1/apps/<bundle id>/channels` with `apns-channel-id` → 200 with the channel's
    /// `message-storage-policy`.
    public func storagePolicy(bundleID: String, channelID: String) throws(Failure) -> Int {
        let response = try call("GET", "/1/apps/\(bundleID)/channels", channel: channelID, expect: 200)
        guard case .int(let policy)? = (try? JSONParser.parse(response.body))?["message-storage-policy"] else {
            throw Failure(description: "Apple's channel \(channelID) has no message-storage-policy")
        }
        return Int(policy)
    }

    /// `DELETE /1/apps/<bundle id>/channels` with `apns-channel-id` → 204.
    public func delete(bundleID: String, channelID: String) throws(Failure) {
        _ = try call("DELETE", "/1/apps/\(bundleID)/channels", channel: channelID, expect: 204)
    }

    /// One request; an expired token is renewed and the request made once more.
    private func call(_ method: String, _ path: String, channel: String? = nil, body: [UInt8] = [], expect: Int) throws(Failure) -> HTTPResponse {
        for attempt in 1...2 {
            let jwt: String
            do { jwt = try tokens.current() } catch { throw Failure(description: "cannot sign the provider token: \(error)") }
            var headers = [("authorization", "bearer " + jwt)]
            if let channel { headers.append(("apns-channel-id", channel)) }
            if !body.isEmpty { headers.append(("content-type", "application/json")) }
            let request = HTTPRequest(method: method, url: baseURL + path, headers: headers, body: body, timeout: 30,
                                      responseHeaders: ["apns-channel-id", "apns-request-id"])
            switch client.executeAndWait(request) {
            case .failure(let error):
                throw Failure(description: "no answer from \(baseURL): \(error.message)")
            case .success(let response):
                if response.status == expect { return response }
                let reason = (try? JSONParser.parse(response.body))?["reason"]?.stringValue
                if response.status == 403, reason == "ExpiredProviderToken", attempt == 1, tokens.invalidate(jwt) { continue }
                let request = response[header: "apns-request-id"].map { " (apns-request-id \($0))" } ?? ""
                throw Failure(description: "Apple answered \(response.status) \(reason ?? "")\(request)"
                                  .replacingOccurrences(of: "  ", with: " "))
            }
        }
        throw Failure(description: "Apple refused a fresh provider token")
    }
}
