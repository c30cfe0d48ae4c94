import Foundation
import PushspoolHTTP
import PushspoolCore

/// One Instance ID batch request that (un)subscribes registration tokens to an FCM topic
/// (`POST <iid>/iid/v1:batchAdd` or `:batchRemove`, body `{"to": "/topics/<name>",
/// "registration_tokens": [...]}`, at most 1,000 tokens), and what its answer says: one result per
/// token, in order (`{}` done, `{"error": "NOT_FOUND"}` not). Pure, so tests compare it byte for
/// byte. Sources: Providers.md, "FCM topic subscriptions".
public enum FCMTopicBatch {
    public enum Action: String, Sendable, CaseIterable {
        case subscribe, unsubscribe

        /// The Instance ID method.
        var method: String { self == .subscribe ? "batchAdd" : "batchRemove" }
    }

    /// Google refuses a request with more.
    public static let maxTokens = 1000

    /// Why FCM would refuse `topic` as a topic name (`[a-zA-Z0-9-_.~%]{1,900}`, the same rule as
    /// `fcm_topic`), or nil. A `/topics/` prefix is accepted and dropped, as firebase-admin does.
    public static func topicProblem(_ topic: String) -> String? {
        FCMCondition.isValidTopic(topicName(topic)) ? nil
            : "\(JSONValue.quoted(topic)) is not a topic name FCM accepts (expected \(FCMCondition.topicRule))"
    }

    /// `topic` without a `/topics/` prefix.
    public static func topicName(_ topic: String) -> String {
        topic.hasPrefix("/topics/") ? String(topic.dropFirst("/topics/".count)) : topic
    }

    static func url(endpoint: String, _ action: Action) -> String {
        FCMProvider.trimmingSlash(endpoint) + "/iid/v1:" + action.method
    }

    static func body(topic: String, tokens: [String]) -> [UInt8] {
        JSONValue.object([("to", .string("/topics/" + topicName(topic))),
                          ("registration_tokens", .array(tokens.map(JSONValue.string)))]).encoded()
    }

    /// The request: the same OAuth bearer as sends, plus `access_token_auth: true`, which the
    /// Instance ID service requires with an OAuth token.
    static func request(url: String, bearer: String, body: [UInt8]) -> HTTPRequest {
        HTTPRequest(method: "POST", url: url,
                    headers: [("Authorization", "Bearer \(bearer)"),
                              ("Content-Type", "application/json; charset=utf-8"),
                              ("access_token_auth", "true")],
                    body: body, timeout: 30)
    }

    /// What an answer says: each token's error (nil: done), or why the whole request failed,
    /// classified as a send's answer is (429 and 5xx retried, 401 a stale token, 403 broken).
    enum Answer: Sendable, Equatable {
        case results([String?])
        case failed(ProviderResult)
    }

    static func answer(_ outcome: Result<HTTPResponse, HTTPTransportError>, count: Int) -> Answer {
        guard case .success(let response) = outcome, response.status == 200 else {
            return .failed(FCMProvider.classify(outcome))
        }
        guard case .array(let items)? = (try? JSONParser.parse(response.body))?["results"], items.count == count else {
            return .failed(ProviderResult(.rejected, code: "200", reason: "the answer does not hold one result per token"))
        }
        return .results(items.map { item in item["error"].map { $0.stringValue ?? "\($0)" } })
    }

    /// A token the service says is gone (`NOT_FOUND`: deleted, or its app uninstalled), removed
    /// from the registry as a send's `UNREGISTERED` is. `INVALID_ARGUMENT` (not valid for this
    /// project's sender id) keeps the device, as a send's `SENDER_ID_MISMATCH` does: it says the
    /// device is routed to the wrong project, not that it is gone.
    public static func isGone(_ error: String) -> Bool { error == "NOT_FOUND" }

    /// A per-token error worth asking again in the next attempt (`INTERNAL`: Google says retry).
    static func isTransient(_ error: String) -> Bool { error == "INTERNAL" }
}
