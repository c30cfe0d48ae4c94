import Foundation
import PushspoolHTTP
import PushspoolCore
import Testing
@testable import PushspoolKit

/// Every row of Push Kit's answer table (PROTOCOLS § 6), as recorded answers, and what becomes
/// of each token of a request of three.
struct HMSClassifierTests {
    struct Recorded: Sendable, CustomStringConvertible {
        var status: Int
        var body: String
        var headers: [String: String] = [:]
        /// Each of the request's tokens `a`, `b`, `c`.
        var expected: [Disposition]
        var code: String
        var description: String { "\(status) \(body)" }
    }

    static let tokens = ["a", "b", "c"]
    static func all(_ d: Disposition) -> [Disposition] { [d, d, d] }

    static let table: [Recorded] = [
        Recorded(status: 200, body: #"{"code":"80000000","msg":"Success","requestId":"r1"}"#, expected: all(.delivered), code: "80000000"),
        // Partial: the listed tokens gone, the rest delivered; both spellings of the list.
        Recorded(status: 200, body: #"{"code":"80100000","msg":"{\"success\":2,\"failure\":1,\"illegal_tokens\":[\"b\"]}","requestId":"r2"}"#,
                 expected: [.delivered, .deviceGone(since: nil), .delivered], code: "80100000"),
        Recorded(status: 200, body: #"{"code":"80100000","msg":"{\"success\":1,\"failure\":2,\"illegalTokens\":[\"a\",\"c\"]}"}"#,
                 expected: [.deviceGone(since: nil), .delivered, .deviceGone(since: nil)], code: "80100000"),
        // A partial answer nobody can read: none resent, none counted delivered.
        Recorded(status: 200, body: #"{"code":"80100000","msg":"partly"}"#, expected: all(.rejected), code: "80100000"),
        Recorded(status: 400, body: #"{"code":"80100001","msg":"Some request parameters are incorrect"}"#, expected: all(.rejected), code: "80100001"),
        Recorded(status: 400, body: #"{"code":"80100003","msg":"Incorrect message structure"}"#, expected: all(.rejected), code: "80100003"),
        Recorded(status: 200, body: #"{"code":"80100016","msg":"The message contains sensitive information"}"#, expected: all(.rejected), code: "80100016"),
        Recorded(status: 401, body: #"{"code":"80200001","msg":"Oauth authentication error"}"#, expected: all(.refreshCredentials), code: "80200001"),
        Recorded(status: 401, body: #"{"code":"80200003","msg":"Oauth Token expired"}"#, expected: all(.refreshCredentials), code: "80200003"),
        Recorded(status: 200, body: #"{"code":"80200003","msg":"Oauth Token expired"}"#, expected: all(.refreshCredentials), code: "80200003"),
        Recorded(status: 403, body: #"{"code":"80300002","msg":"The current app does not have the permission to send messages"}"#,
                 expected: all(.credentialsBroken), code: "80300002"),
        Recorded(status: 200, body: #"{"code":"80300007","msg":"All tokens are invalid"}"#, expected: all(.deviceGone(since: nil)), code: "80300007"),
        Recorded(status: 200, body: #"{"code":"80300010","msg":"The number of tokens exceeds the default value"}"#, expected: all(.rejected), code: "80300010"),
        Recorded(status: 500, body: #"{"code":"81000001","msg":"System inner error"}"#, expected: all(.retry(after: nil)), code: "81000001"),
        Recorded(status: 200, body: #"{"code":81000001,"msg":"System inner error"}"#, headers: ["retry-after": "7"], expected: all(.retry(after: 7)), code: "81000001"),
        Recorded(status: 429, body: "", headers: ["retry-after": "30"], expected: all(.retry(after: 30)), code: "429"),
        Recorded(status: 503, body: "<html>busy</html>", expected: all(.retry(after: nil)), code: "503"),
        Recorded(status: 502, body: "", expected: all(.retry(after: nil)), code: "502"),
        Recorded(status: 401, body: "", expected: all(.refreshCredentials), code: "401"),
        Recorded(status: 403, body: "", expected: all(.credentialsBroken), code: "403"),
        Recorded(status: 200, body: #"{"code":"80999999","msg":"new"}"#, expected: all(.rejected), code: "80999999"),
        // Codes of Huawei's table (the send API's error codes) beyond PROTOCOLS' first list.
        Recorded(status: 400, body: #"{"code":"80100004","msg":"The message expiration time is earlier than the current time"}"#, expected: all(.rejected), code: "80100004"),
        Recorded(status: 400, body: #"{"code":"80100013","msg":"The collapse_key message field is invalid"}"#, expected: all(.rejected), code: "80100013"),
        Recorded(status: 400, body: #"{"code":"80300008","msg":"The message body size exceeds the default value"}"#, expected: all(.rejected), code: "80300008"),
        Recorded(status: 200, body: #"{"code":"80300011","msg":"No permission to send high-level notification messages"}"#, expected: all(.rejected), code: "80300011"),
        Recorded(status: 200, body: #"{"code":"80600003","msg":"Request OAuth service failed"}"#, expected: all(.refreshCredentials), code: "80600003"),
        // Service not found: the configured endpoint or app id, for every request alike.
        Recorded(status: 404, body: "", expected: all(.credentialsBroken), code: "404"),
    ]

    @Test(arguments: table)
    func classifiesEachTokenOfRecordedAnswer(_ r: Recorded) {
        let answer = HMSAnswer(HTTPResponse(status: r.status, headers: r.headers, body: Array(r.body.utf8)))
        #expect(Self.tokens.map { answer.result(for: $0).disposition } == r.expected)
        #expect(answer.result(for: "a").code == r.code)
    }

    @Test func partialAnswerNamesNoHandleInItsReasons() {
        let body = #"{"code":"80100000","msg":"{\"success\":2,\"failure\":1,\"illegal_tokens\":[\"secret-token\"]}","requestId":"r9"}"#
        let answer = HMSAnswer(HTTPResponse(status: 200, body: Array(body.utf8)))
        let gone = answer.result(for: "secret-token"), sent = answer.result(for: "other")
        #expect(gone.reason == "illegal token (80100000)")
        #expect(sent.reason == nil)
        #expect(sent.providerID == "r9")
    }

    @Test func transportFailureAnswersEveryToken() {
        let answer = HMSProvider.classify(.failure(HTTPTransportError("certificate verify failed", isPermanent: true)))
        #expect(Self.tokens.map { answer.result(for: $0).disposition } == Self.all(.credentialsBroken))
        let transient = HMSProvider.classify(.failure(HTTPTransportError("reset")))
        #expect(transient.result(for: "a").disposition == .retry(after: nil))
    }

    @Test func illegalTokenListReadsBothSpellings() {
        #expect(HMSClassifier.illegalTokens(#"{"illegal_tokens":["x","y"]}"#) == ["x", "y"])
        #expect(HMSClassifier.illegalTokens(#"{"illegalTokens":["z"]}"#) == ["z"])
        #expect(HMSClassifier.illegalTokens(#"{"success":1}"#) == nil)
        #expect(HMSClassifier.illegalTokens("not json") == nil)
    }
}
