import Foundation
import PushspoolHTTP
import PushspoolCore

/// What an FCM v1 `messages:send` response says, parsed once: the message `name` on success, or
/// the error's HTTP status, gRPC `status`, FCM `errorCode` and whether it is about the token.
public struct FCMResponse: Sendable, Equatable {
    public var httpStatus: Int
    /// `projects/<id>/messages/<message_id>`.
    public var name: String?
    /// gRPC canonical status (`NOT_FOUND`, `UNAUTHENTICATED`, …).
    public var status: String?
    public var errorCode: FCMErrorCode?
    /// The 400 concerns the registration token (`message.token` field violation or Google's
    /// "not a valid FCM registration token" message) rather than the payload.
    public var invalidToken: Bool
    /// `Retry-After` in seconds (delta-seconds or HTTP-date).
    public var retryAfter: Double?

    public init(_ response: HTTPResponse, now: Date = Date()) {
        httpStatus = response.status
        let json = try? JSONParser.parse(response.body)
        name = json?["name"]?.stringValue
        let error = json?["error"]
        status = error?["status"]?.stringValue
        var code: FCMErrorCode?
        var tokenField = false
        if case .array(let details)? = error?["details"] {
            for d in details {
                let type = d["@type"]?.stringValue ?? ""
                if type.hasSuffix("google.firebase.fcm.v1.FcmError"), let raw = d["errorCode"]?.stringValue {
                    code = FCMErrorCode(raw: raw)
                }
                if type.hasSuffix("google.rpc.BadRequest"), case .array(let violations)? = d["fieldViolations"] {
                    tokenField = tokenField || violations.contains { $0["field"]?.stringValue == "message.token" }
                }
            }
        }
        errorCode = code
        let message = (error?["message"]?.stringValue ?? "").lowercased()
        invalidToken = tokenField || message.contains("registration token")
        retryAfter = response[header: "retry-after"].flatMap { RetryAfter.seconds($0, now: now) }
    }

    /// The result-log reason: FCM's `errorCode`, else the gRPC `status`, else the HTTP status.
    public var reason: String? {
        if httpStatus == 200 { return nil }
        return errorCode?.raw ?? status ?? "HTTP \(httpStatus)"
    }

    /// Quota errors back off at least this long when the service gives no `Retry-After`
    /// (Google: "a minimum initial delay of 1 minute" for project and topic quotas).
    public static let quotaBackoff: Double = 60

    /// The one FCM classification table (README: "How answers are handled").
    public var disposition: Disposition {
        switch (httpStatus, errorCode) {
        case (200, _): return .delivered
        case (_, .quotaExceeded?), (429, _): return .retry(after: retryAfter ?? Self.quotaBackoff)
        case (_, .unregistered?): return .deviceGone(since: nil)
        // The token belongs to another Firebase project: an app routed to the wrong project (an
        // app-level refusal), not a dead device. The target fails, the device stays.
        case (_, .senderIDMismatch?): return .rejected
        case (_, .thirdPartyAuthError?): return .senderRefused         // APNs/web-push credentials in Firebase (iOS/web tokens only): keep tokens
        case (400, _): return invalidToken ? .deviceGone(since: nil) : .rejected
        case (401, _): return .refreshCredentials                      // UNAUTHENTICATED: our access token expired
        case (403, _): return .credentialsBroken                       // PERMISSION_DENIED: IAM / wrong project
        case (404, _): return .credentialsBroken                       // no such project or endpoint: configuration
        case (_, .unavailable?), (_, .internalError?), (_, .unspecified?), (500...599, _), (408, _):
            return .retry(after: retryAfter)
        default: return .rejected
        }
    }

    public var result: ProviderResult {
        ProviderResult(disposition, code: String(httpStatus), reason: reason, providerID: name)
    }
}

