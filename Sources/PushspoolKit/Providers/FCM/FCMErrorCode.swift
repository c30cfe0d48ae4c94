/// FCM v1's `errorCode` (from the `google.firebase.fcm.v1.FcmError` detail). Unknown codes the
/// service adds later are kept as `.other` with their raw string, never an error.
public enum FCMErrorCode: Sendable, Equatable {
    case unspecified, invalidArgument, unregistered, senderIDMismatch, quotaExceeded
    case unavailable, internalError, thirdPartyAuthError
    case other(String)

    public init(raw: String) {
        switch raw {
        case "UNSPECIFIED_ERROR": self = .unspecified
        case "INVALID_ARGUMENT": self = .invalidArgument
        case "UNREGISTERED": self = .unregistered
        case "SENDER_ID_MISMATCH": self = .senderIDMismatch
        case "QUOTA_EXCEEDED": self = .quotaExceeded
        case "UNAVAILABLE": self = .unavailable
        case "INTERNAL": self = .internalError
        case "THIRD_PARTY_AUTH_ERROR": self = .thirdPartyAuthError
        default: self = .other(raw)
        }
    }

    public var raw: String {
        switch self {
        case .unspecified: return "UNSPECIFIED_ERROR"
        case .invalidArgument: return "INVALID_ARGUMENT"
        case .unregistered: return "UNREGISTERED"
        case .senderIDMismatch: return "SENDER_ID_MISMATCH"
        case .quotaExceeded: return "QUOTA_EXCEEDED"
        case .unavailable: return "UNAVAILABLE"
        case .internalError: return "INTERNAL"
        case .thirdPartyAuthError: return "THIRD_PARTY_AUTH_ERROR"
        case .other(let s): return s
        }
    }
}
