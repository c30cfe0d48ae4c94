import Foundation
import PushspoolHTTP
import PushspoolCore
import Testing
@testable import PushspoolKit

/// FCM's classification table, driven by recorded response shapes.
@Suite struct FCMResponseTests {
    static func fcmError(_ http: Int, _ status: String, _ code: String?, message: String = "x",
                         extra: String = "") -> String {
        let detail = code.map { #"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}"# }
        let details = [detail, extra.isEmpty ? nil : extra].compactMap { $0 }.joined(separator: ",")
        return #"{"error":{"code":\#(http),"message":"\#(message)","status":"\#(status)","details":[\#(details)]}}"#
    }

    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var status: Int
        var body: String
        var headers: [String: String] = [:]
        var disposition: Disposition
        var reason: String?
        var providerID: String? = nil
    }

    static let cases: [Case] = [
        Case(description: "200 keeps name", status: 200, body: #"{"name":"projects/p/messages/0:123"}"#,
             disposition: .delivered, reason: nil, providerID: "projects/p/messages/0:123"),
        Case(description: "404 UNREGISTERED", status: 404, body: fcmError(404, "NOT_FOUND", "UNREGISTERED"),
             disposition: .deviceGone(since: nil), reason: "UNREGISTERED"),
        Case(description: "400 invalid token (message)", status: 400,
             body: fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT",
                            message: "The registration token is not a valid FCM registration token"),
             disposition: .deviceGone(since: nil), reason: "INVALID_ARGUMENT"),
        Case(description: "400 invalid token (field violation)", status: 400,
             body: fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", message: "Invalid value",
                            extra: #"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token","description":"bad"}]}"#),
             disposition: .deviceGone(since: nil), reason: "INVALID_ARGUMENT"),
        Case(description: "400 bad payload", status: 400,
             body: fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", message: "Invalid value at 'message.data[0].value'"),
             disposition: .rejected, reason: "INVALID_ARGUMENT"),
        Case(description: "403 SENDER_ID_MISMATCH", status: 403, body: fcmError(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"),
             disposition: .rejected, reason: "SENDER_ID_MISMATCH"),
        Case(description: "403 PERMISSION_DENIED (IAM)", status: 403, body: fcmError(403, "PERMISSION_DENIED", nil),
             disposition: .credentialsBroken, reason: "PERMISSION_DENIED"),
        Case(description: "429 with Retry-After", status: 429, body: fcmError(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"),
             headers: ["retry-after": "17"], disposition: .retry(after: 17), reason: "QUOTA_EXCEEDED"),
        Case(description: "429 without Retry-After starts at 60 s", status: 429,
             body: fcmError(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"),
             disposition: .retry(after: 60), reason: "QUOTA_EXCEEDED"),
        Case(description: "503 UNAVAILABLE", status: 503, body: fcmError(503, "UNAVAILABLE", "UNAVAILABLE"),
             disposition: .retry(after: nil), reason: "UNAVAILABLE"),
        Case(description: "503 with Retry-After", status: 503, body: "", headers: ["retry-after": "5"],
             disposition: .retry(after: 5), reason: "HTTP 503"),
        Case(description: "500 INTERNAL", status: 500, body: fcmError(500, "INTERNAL", "INTERNAL"),
             disposition: .retry(after: nil), reason: "INTERNAL"),
        Case(description: "401 THIRD_PARTY_AUTH_ERROR pauses, keeps tokens", status: 401,
             body: fcmError(401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"),
             disposition: .senderRefused, reason: "THIRD_PARTY_AUTH_ERROR"),
        Case(description: "401 expired access token", status: 401,
             body: #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#,
             disposition: .refreshCredentials, reason: "UNAUTHENTICATED"),
        Case(description: "404 without UNREGISTERED is configuration", status: 404,
             body: #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}"#,
             disposition: .credentialsBroken, reason: "NOT_FOUND"),
        Case(description: "unknown errorCode kept raw", status: 400, body: fcmError(400, "FAILED_PRECONDITION", "SOMETHING_NEW"),
             disposition: .rejected, reason: "SOMETHING_NEW"),
        Case(description: "non-JSON 502", status: 502, body: "<html>bad gateway</html>",
             disposition: .retry(after: nil), reason: "HTTP 502"),
    ]

    @Test(arguments: cases)
    func classifies(_ c: Case) {
        let r = FCMResponse(HTTPResponse(status: c.status, headers: c.headers, body: Array(c.body.utf8))).result
        #expect(r.disposition == c.disposition)
        #expect(r.code == String(c.status))
        #expect(r.reason == c.reason)
        #expect(r.providerID == c.providerID)
    }

    @Test func errorCodesRoundTripAndKeepUnknownStrings() {
        for raw in ["UNSPECIFIED_ERROR", "INVALID_ARGUMENT", "UNREGISTERED", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED",
                    "UNAVAILABLE", "INTERNAL", "THIRD_PARTY_AUTH_ERROR", "BRAND_NEW"] {
            #expect(FCMErrorCode(raw: raw).raw == raw)
        }
        #expect(FCMErrorCode(raw: "BRAND_NEW") == .other("BRAND_NEW"))
    }

    @Test func retryAfterAcceptsHTTPDates() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)   // Fri, 15 Jan 2027 08:00:00 GMT
        #expect(RetryAfter.seconds("120", now: now) == 120)
        #expect(RetryAfter.seconds("Fri, 15 Jan 2027 08:00:30 GMT", now: now) == 30)
        #expect(RetryAfter.seconds("soon", now: now) == nil)
    }
}
