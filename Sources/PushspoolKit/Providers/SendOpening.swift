import PushspoolCore
import PushspoolHTTP

/// The opening every HTTP provider's `send` shares, and the one place a transport failure (no
/// HTTP answer) becomes a `ProviderResult`.
///
/// - A provider that was shut down answers a retry: the dispatcher is stopping, and the resumed
///   job sends the target.
/// - A request the provider cannot carry (another recipient kind, another platform's
///   notification) is a routing bug, refused before any work.
/// - A permanent transport failure (TLS verification, a malformed URL) means what the endpoint's
///   origin makes it mean (`Endpoint`); any other is retried with backoff.
enum SendOpening {
    /// Where a provider's requests go, which decides what a permanent transport failure is.
    enum Endpoint {
        /// One endpoint from the configuration for every request (APNs, FCM, the hub): every
        /// request would fail the same way, so the provider pauses (`credentialsBroken`) until
        /// the configuration is fixed, instead of burning every target's attempts.
        case configured
        /// Each device names its own endpoint (a WNS channel URI, a Web Push subscription's
        /// push service): only that device's requests fail, so only its target is refused
        /// (`rejected`) and the campaign goes on.
        case perDevice
    }

    /// The answer of a provider shut down.
    static func shutDown(_ provider: String) -> ProviderResult {
        ProviderResult(.retry(after: nil), code: "shutdown", reason: "\(provider) provider is shut down")
    }

    /// A transport failure as `endpoint` makes it mean.
    static func transportFailure(_ error: HTTPTransportError, endpoint: Endpoint) -> ProviderResult {
        let disposition: Disposition = switch endpoint {
        case _ where !error.isPermanent: .retry(after: nil)
        case .configured: .credentialsBroken
        case .perDevice: .rejected
        }
        return ProviderResult(disposition, code: "transport", reason: error.message)
    }

    /// The device and the provider's own notification (`own` picks it out of the rendered one);
    /// nil once `completion` has been given the answer instead.
    static func device<Own>(_ request: SendRequest, provider: String, isShutDown: Bool,
                            own: (RenderedNotification) -> Own?,
                            completion: (ProviderResult) -> Void) -> (Device, Own)? {
        if isShutDown {
            completion(shutDown(provider))
            return nil
        }
        guard case .device(let device) = request.recipient else {
            completion(ProviderResult(.rejected, code: "unsupported", reason: "\(provider) sends to registered devices only"))
            return nil
        }
        guard let notification = own(request.notification) else {
            completion(ProviderResult(.rejected, code: "unsupported",
                                      reason: "\(provider) cannot send a \(request.notification.platform.rawValue) notification"))
            return nil
        }
        return (device, notification)
    }
}
