import PushspoolCore
import PushspoolHTTP

/// The one table from an APNs answer to a `Disposition` (README: "How answers are handled"). Pure, so it is tested from
/// a table of recorded responses.
public enum APNsClassifier {
    /// `timestamp`: the 410 body's `timestamp`, which Apple documents in milliseconds since the epoch.
    /// `retryAfter`: a `Retry-After` header in seconds, when present.
    public static func disposition(status: Int, reason: APNsReason?, timestamp: Double? = nil,
                                   retryAfter: Double? = nil) -> Disposition {
        switch (status, reason) {
        case (200, _):
            return .delivered

        // The device is gone. Registry pruning respects `since`: a device that registered again
        // after Apple saw the token go stale stays.
        case (410, _):
            return .deviceGone(since: timestamp.map { $0 / 1000 })
        case (400, .badDeviceToken?):
            return .deviceGone(since: nil)
        // The token is another app's (another topic): the device was registered under the wrong
        // app, not gone. An app-level refusal: the target fails, the device stays.
        case (400, .deviceTokenNotForTopic?):
            return .rejected

        // The connection, not the notification, is the problem: new connection, retry at once.
        case (400, .idleTimeout?), (403, .unrelatedKeyIdInToken?), (503, .shutdown?):
            return .reconnect

        // A stale or refused JWT: the provider has dropped it already (unless it is under 20
        // minutes old), so the retry carries a new one. InvalidProviderToken is "refresh
        // once, then fail": a second refusal in a row makes the engine pause the provider.
        case (403, .expiredProviderToken?), (403, .invalidProviderToken?):
            return .refreshCredentials
        // Any other 403 is about the key, team or certificate (Forbidden,
        // BadEnvironmentKeyIdInToken, MissingProviderToken, reasons added later): every further
        // request would fail the same way, so the engine pauses the provider.
        case (403, _):
            return .credentialsBroken

        // Keep the current JWT and retry later (its renewal is rate-limited by the cache anyway).
        case (429, .tooManyProviderTokenUpdates?):
            return .retry(after: retryAfter)
        case (429, _):
            return .retry(after: retryAfter)
        case (500...599, _):
            return .retry(after: retryAfter)

        // Every other 4xx: the request itself is wrong (bad header, payload too large, topic
        // disallowed, unknown reason); retrying the same bytes cannot help.
        default:
            return .rejected
        }
    }

    /// A transport failure (no HTTP answer). A permanent one (TLS verification, bad endpoint URL)
    /// is a configuration problem that every request would hit: pause. Otherwise the connection
    /// went away (GOAWAY, reset, refused, timeout) and the request is retried with backoff.
    public static func disposition(transport error: HTTPTransportError) -> Disposition {
        SendOpening.transportFailure(error, endpoint: .configured).disposition
    }
}
