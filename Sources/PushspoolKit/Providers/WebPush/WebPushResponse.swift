import Foundation
import PushspoolCore
import PushspoolHTTP

/// What a push service answered to one RFC 8030 POST, classified once. The browsers' push
/// services (FCM, Mozilla autopush, WNS, Apple) share RFC 8030's status codes; their bodies are
/// free text or JSON and are kept, clipped, as the reason.
public struct WebPushResponse: Sendable, Equatable {
    public var httpStatus: Int
    /// `Retry-After`, in seconds from now.
    public var retryAfter: Double?
    /// `Location`: the push message resource (the service's id for the message).
    public var location: String?
    public var body: String?

    public init(_ response: HTTPResponse, now: Date = Date()) {
        httpStatus = response.status
        retryAfter = RetryAfter.seconds(response[header: "retry-after"], now: now)
        location = response[header: "location"]
        let text = String(decoding: response.body.prefix(200), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        body = text.isEmpty ? nil : text
    }

    /// The one Web Push classification table.
    public var disposition: Disposition {
        switch httpStatus {
        case 200, 201, 202: return .delivered                // 201 Created is RFC 8030's answer
        case 404, 410: return .deviceGone(since: nil)         // subscription expired or unsubscribed
        case 401, 403: return .credentialsBroken              // VAPID refused: the key or subject is wrong
        case 408, 429, 500...599: return .retry(after: retryAfter)
        default: return .rejected                             // 400 malformed, 413 too large…
        }
    }

    /// The service's text, else a short name for the status.
    public var reason: String? {
        // On one line: every character that would break it or drive a terminal (line and
        // paragraph separators included) becomes a space (`TerminalText.mustEscape`).
        if let body { return String(String.UnicodeScalarView(body.unicodeScalars.map { TerminalText.mustEscape($0) ? " " : $0 })) }
        switch httpStatus {
        case 200, 201, 202: return nil
        case 404, 410: return "subscription gone"
        case 401, 403: return "VAPID authorization refused"
        case 413: return "payload too large"
        case 429: return "too many requests"
        default: return "HTTP \(httpStatus)"
        }
    }

    public var result: ProviderResult {
        ProviderResult(disposition, code: String(httpStatus), reason: reason, providerID: location)
    }
}
