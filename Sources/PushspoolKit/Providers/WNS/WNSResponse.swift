import PushspoolCore
import PushspoolHTTP

/// `X-WNS-Status` on a 200. Unknown values are kept raw.
public enum WNSNotificationStatus: Sendable, Equatable {
    case received, dropped, channelThrottled
    case other(String)

    public init(raw: String) {
        switch raw.lowercased() {
        case "received": self = .received
        case "dropped": self = .dropped
        case "channelthrottled": self = .channelThrottled
        default: self = .other(raw)
        }
    }
}

/// What a WNS channel POST response says (README: "How answers are handled"), parsed once.
public struct WNSResponse: Sendable, Equatable {
    public var httpStatus: Int
    public var status: WNSNotificationStatus?
    public var errorDescription: String?
    public var messageID: String?
    /// `X-WNS-CONTINUE-AFTER`: seconds to wait when throttled.
    public var continueAfter: Double?

    public init(_ response: HTTPResponse) {
        httpStatus = response.status
        status = response[header: "x-wns-status"].map(WNSNotificationStatus.init(raw:))
        errorDescription = response[header: "x-wns-error-description"]
        messageID = response[header: "x-wns-msg-id"]
        continueAfter = response[header: "x-wns-continue-after"].flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            .flatMap { $0 >= 0 && $0.isFinite ? $0 : nil }
    }

    /// Throttling without a `X-WNS-CONTINUE-AFTER` backs off at least this long.
    public static let throttleBackoff: Double = 60

    /// The one WNS classification table.
    public var disposition: Disposition {
        switch httpStatus {
        case 200:
            switch status {
            // `dropped`: WNS accepted the request but chose not to deliver (device offline for a
            // non-cached type, or the user turned notifications off). Retrying cannot change
            // that, so it counts as accepted and the reason records "dropped".
            case .channelThrottled?: return .retry(after: continueAfter ?? Self.throttleBackoff)
            default: return .delivered
            }
        case 401: return .refreshCredentials                 // access token expired or invalid
        case 403: return .senderRefused                      // our app does not own this channel: keep it
        case 404, 410: return .deviceGone(since: nil)        // channel unknown or expired
        case 406: return .retry(after: continueAfter ?? Self.throttleBackoff)
        case 408, 429, 500...599: return .retry(after: continueAfter)
        default: return .rejected                            // 400, 405, 413…
        }
    }

    /// `X-WNS-Error-Description`, else the notification status, else the HTTP status.
    public var reason: String? {
        if let errorDescription, !errorDescription.isEmpty { return errorDescription }
        switch status {
        case .received?: return httpStatus == 200 ? nil : "received"
        case .dropped?: return "dropped"
        case .channelThrottled?: return "channelthrottled"
        case .other(let s)?: return s
        case nil: return httpStatus == 200 ? nil : "HTTP \(httpStatus)"
        }
    }

    public var result: ProviderResult {
        ProviderResult(disposition, code: String(httpStatus), reason: reason, providerID: messageID)
    }
}
