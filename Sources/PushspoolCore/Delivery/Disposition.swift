/// The one normalised verdict on a send attempt that drives the engine. Every provider maps its
/// own status codes and reasons to one of these; the engine alone decides what happens next.
public enum Disposition: Sendable, Equatable {
    /// The provider accepted the notification.
    case delivered
    /// Transient failure: try again, no sooner than `after` seconds when the service said so.
    case retry(after: Double?)
    /// The connection is unusable (GOAWAY, `Shutdown`, idle timeout): the provider has already
    /// dropped it; retry on a fresh one without counting a backoff.
    case reconnect
    /// The credential was stale (expired JWT/OAuth/SAS). The provider has already renewed it;
    /// retry once at once. A second one in a row for the same target means `credentialsBroken`.
    case refreshCredentials
    /// The device is gone (unregistered, expired or invalid token/channel): remove it from the
    /// registry unless it re-registered after `since` (Unix seconds, when the service says).
    case deviceGone(since: Double?)
    /// Permanent rejection of this notification (bad request, payload too large…): do not retry.
    case rejected
    /// The service refused this target because of the sender's configuration, which may concern
    /// this device only or everyone (WNS 403: our app does not own this channel; FCM
    /// THIRD_PARTY_AUTH_ERROR: the project lacks the APNs/web credentials for this kind of
    /// token). Fail the target, keep the device; the engine pauses the provider only when
    /// several targets in a row are refused this way.
    case senderRefused
    /// The provider's credentials or configuration are wrong (bad key, wrong team, forbidden):
    /// pause the provider and fail its remaining targets with this reason instead of hammering.
    case credentialsBroken
}

/// Final per-target status written to the result log. `capped`: not sent, because the device
/// had reached its app's `frequency_cap` (a capped job only); never retried.
public enum DeliveryStatus: String, Sendable, Equatable {
    case delivered, failed, unregistered, capped
}

/// What a provider says about one attempt: the disposition plus what the result log records.
public struct ProviderResult: Sendable, Equatable {
    public var disposition: Disposition
    /// HTTP status as a string ("200", "410"), or a local code ("transport", "host-not-allowed").
    public var code: String?
    /// The service's reason (`Unregistered`, `UNREGISTERED`, `X-WNS-Error-Description`…), never a credential.
    public var reason: String?
    /// The service's id for the message (`apns-id`, FCM `name`, `X-WNS-Msg-ID`, hub notification id).
    public var providerID: String?
    /// The device's new handle, when a delivery's answer names one (ADM's canonical
    /// `registrationID`): the registry replaces the handle sent with it.
    public var canonicalHandle: String?
    /// The service's wait (`retry(after:)`) concerns this target only (ADM's per-device
    /// `MaxRateExceeded`): its retry waits, the provider's other targets go on.
    public var waitIsTargets = false

    public init(_ disposition: Disposition, code: String? = nil, reason: String? = nil, providerID: String? = nil,
                canonicalHandle: String? = nil) {
        self.disposition = disposition
        self.code = code
        self.reason = reason
        self.providerID = providerID
        self.canonicalHandle = canonicalHandle
    }
}
