import PushspoolCore
import PushspoolHTTP

/// Which Web Push endpoints pushspool will POST to.
///
/// An endpoint comes from whoever registered the subscription, i.e. from a web page. Without
/// this check a crafted subscription could make pushspool post (with a VAPID token) to any
/// address, internal ones included. An endpoint is used only if it is https and its host and port
/// pass `allowed_hosts` (`HostAllowList`: the browsers' push services on 443 only, an operator's
/// own entry on the port it names or on any); the authority is parsed strictly, as for WNS
/// channels (`WNSChannelPolicy`, whose parser this shares).
public struct WebPushEndpointPolicy: Sendable, Equatable {
    private let hosts: WNSChannelPolicy

    public init(allowedHosts: [String]) { hosts = WNSChannelPolicy(allowedHosts: allowedHosts, wellKnown: WebPushConfig.defaultAllowedHosts) }

    public var allowedHosts: [String] { hosts.allowedHosts }

    /// Nil when `endpoint` may be posted to, else why not (naming at most the host).
    public func denial(_ endpoint: String) -> String? {
        switch hosts.check(endpoint) {
        case .allowed: return nil
        case .denied(let reason): return reason.replacingOccurrences(of: "channel URI", with: "endpoint")
            .replacingOccurrences(of: "channel host", with: "endpoint host")
        }
    }

    /// The connect-time address check (`WNSChannelPolicy.addressGuard`).
    public var addressGuard: AddressGuard { hosts.addressGuard() }

    /// A problem line per unusable `allowed_hosts` entry.
    public static func configProblems(_ hosts: [String]) -> [String] {
        WNSChannelPolicy.configProblems(hosts).map { $0.replacingOccurrences(of: "providers.wns.", with: "providers.webpush.")
            .replacingOccurrences(of: "no channel", with: "no endpoint") }
    }
}
