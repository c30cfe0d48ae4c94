import Foundation
import PushspoolHTTP
import PushspoolCore
import Testing
@testable import PushspoolKit

/// Recorded APNs answers (status, body, headers) and what the provider must make of them.
struct APNsClassifierTests {
    struct Recorded: Sendable, CustomStringConvertible {
        var status: Int
        var body: String
        var headers: [String: String] = [:]
        var expected: Disposition
        var reason: String?
        var description: String { "\(status) \(body)" }
    }

    static let table: [Recorded] = [
        Recorded(status: 200, body: "", headers: ["apns-id": "11111111-2222-5333-8444-555555555555"], expected: .delivered),
        Recorded(status: 410, body: #"{"reason":"Unregistered","timestamp":1700000000000}"#, expected: .deviceGone(since: 1_700_000_000), reason: "Unregistered"),
        Recorded(status: 410, body: #"{"reason":"ExpiredToken"}"#, expected: .deviceGone(since: nil), reason: "ExpiredToken"),
        Recorded(status: 400, body: #"{"reason":"BadDeviceToken"}"#, expected: .deviceGone(since: nil), reason: "BadDeviceToken"),
        Recorded(status: 400, body: #"{"reason":"DeviceTokenNotForTopic"}"#, expected: .rejected, reason: "DeviceTokenNotForTopic"),
        Recorded(status: 400, body: #"{"reason":"BadCollapseId"}"#, expected: .rejected, reason: "BadCollapseId"),
        Recorded(status: 400, body: #"{"reason":"BadTopic"}"#, expected: .rejected, reason: "BadTopic"),
        Recorded(status: 400, body: #"{"reason":"InvalidPushType"}"#, expected: .rejected, reason: "InvalidPushType"),
        Recorded(status: 400, body: #"{"reason":"TopicDisallowed"}"#, expected: .rejected, reason: "TopicDisallowed"),
        Recorded(status: 400, body: #"{"reason":"IdleTimeout"}"#, expected: .reconnect, reason: "IdleTimeout"),
        Recorded(status: 400, body: #"{"reason":"SomethingAppleAddsLater"}"#, expected: .rejected, reason: "SomethingAppleAddsLater"),
        Recorded(status: 403, body: #"{"reason":"ExpiredProviderToken"}"#, expected: .refreshCredentials, reason: "ExpiredProviderToken"),
        Recorded(status: 403, body: #"{"reason":"InvalidProviderToken"}"#, expected: .refreshCredentials, reason: "InvalidProviderToken"),
        Recorded(status: 403, body: #"{"reason":"BadEnvironmentKeyIdInToken"}"#, expected: .credentialsBroken, reason: "BadEnvironmentKeyIdInToken"),
        Recorded(status: 403, body: #"{"reason":"Forbidden"}"#, expected: .credentialsBroken, reason: "Forbidden"),
        Recorded(status: 403, body: #"{"reason":"MissingProviderToken"}"#, expected: .credentialsBroken, reason: "MissingProviderToken"),
        Recorded(status: 403, body: #"{"reason":"UnrelatedKeyIdInToken"}"#, expected: .reconnect, reason: "UnrelatedKeyIdInToken"),
        Recorded(status: 404, body: #"{"reason":"BadPath"}"#, expected: .rejected, reason: "BadPath"),
        Recorded(status: 405, body: #"{"reason":"MethodNotAllowed"}"#, expected: .rejected, reason: "MethodNotAllowed"),
        Recorded(status: 413, body: #"{"reason":"PayloadTooLarge"}"#, expected: .rejected, reason: "PayloadTooLarge"),
        Recorded(status: 429, body: #"{"reason":"TooManyRequests"}"#, expected: .retry(after: nil), reason: "TooManyRequests"),
        Recorded(status: 429, body: #"{"reason":"TooManyRequests"}"#, headers: ["retry-after": "30"], expected: .retry(after: 30), reason: "TooManyRequests"),
        Recorded(status: 429, body: #"{"reason":"TooManyProviderTokenUpdates"}"#, expected: .retry(after: nil), reason: "TooManyProviderTokenUpdates"),
        Recorded(status: 500, body: #"{"reason":"InternalServerError"}"#, expected: .retry(after: nil), reason: "InternalServerError"),
        Recorded(status: 503, body: #"{"reason":"ServiceUnavailable"}"#, expected: .retry(after: nil), reason: "ServiceUnavailable"),
        Recorded(status: 503, body: #"{"reason":"Shutdown"}"#, expected: .reconnect, reason: "Shutdown"),
        Recorded(status: 502, body: "<html>bad gateway</html>", expected: .retry(after: nil), reason: "HTTP 502"),
    ]

    static func provider(_ client: any HTTPClient = ScriptedHTTPClient { _ in .failure(HTTPTransportError("unused")) }) -> APNsProvider {
        let cache = CredentialCache(directory: nil)
        return APNsProvider(tokens: APNsTokenSource(teamID: APNsFixtures.teamID, keyID: APNsFixtures.keyID,
                                                    key: APNsFixtures.key, cache: cache),
                            builder: APNsRequestBuilder(baseURL: "https://api.push.apple.com", topic: "com.example.app"),
                            client: client, clock: { Date() }, log: Log(minimum: .error))
    }

    @Test(arguments: table)
    func classifiesRecordedResponse(_ r: Recorded) {
        let response = HTTPResponse(status: r.status, headers: r.headers, body: Array(r.body.utf8))
        let result = Self.provider().classify(.success(response), jwt: "jwt", apnsID: "ours")
        #expect(result.disposition == r.expected)
        #expect(result.code == String(r.status))
        #expect(result.reason == r.reason)
        #expect(result.providerID == (r.headers["apns-id"] ?? "ours"))
    }

    @Test func unknownReasonKeepsAppleString() {
        #expect(APNsReason("SomethingNew") == .other("SomethingNew"))
        #expect(APNsReason("SomethingNew").rawValue == "SomethingNew")
        #expect(APNsReason("Unregistered") == .unregistered)
        #expect(APNsReason.wire.allSatisfy { APNsReason($0.1) == $0.0 && $0.0.rawValue == $0.1 })
    }

    @Test(arguments: [(HTTPTransportError("GOAWAY before answer"), Disposition.retry(after: nil)),
                      (HTTPTransportError("certificate verify failed", isPermanent: true), .credentialsBroken)])
    func classifiesTransportErrors(_ error: HTTPTransportError, _ expected: Disposition) {
        let result = Self.provider().classify(.failure(error), jwt: "jwt", apnsID: "ours")
        #expect(result.disposition == expected)
        #expect(result.code == "transport")
        #expect(result.reason == error.message)
    }
}
