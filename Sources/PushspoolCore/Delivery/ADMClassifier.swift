/// The one table from an Amazon Device Messaging answer to a `Disposition` (README: "How
/// answers are handled"). Pure, so it is tested row by row. A `200`'s `registrationID` that
/// differs from the one sent is the device's canonical id (`canonicalID`).
public enum ADMClassifier {
    /// `reason`: the body's `reason`; `retryAfter`: a `Retry-After` in seconds, when present.
    public static func disposition(status: Int, reason: String?, retryAfter: Double? = nil) -> Disposition {
        switch (status, reason) {
        case (200, _):
            return .delivered
        // The registration id is not (or no longer) the app's on a device.
        case (400, "InvalidRegistrationId"?), (400, "Unregistered"?):
            return .deviceGone(since: nil)
        // InvalidData, InvalidConsolidationKey, InvalidExpiration, InvalidChecksum, InvalidType,
        // MessageTooLarge and reasons added later: the message is wrong, a resend fails alike.
        case (400, _), (413, _):
            return .rejected
        // AccessTokenExpired: refreshed and retried once; a second in a row pauses the provider.
        case (401, _):
            return .refreshCredentials
        // The security profile may not send (not enabled for ADM): configuration.
        case (403, _):
            return .credentialsBroken
        // MaxRateExceeded for this device, and the service's own trouble: later, honouring Retry-After.
        case (429, _), (500...599, _):
            return .retry(after: retryAfter)
        default:
            return .rejected
        }
    }

    /// The id a `200` names when it is not the one sent: the device's new handle.
    public static func canonicalID(sent: String, answered: String?) -> String? {
        guard let answered, !answered.isEmpty, answered != sent else { return nil }
        return answered
    }
}
