/// Which WNS channel URIs pushspool will POST to (and so hand its bearer token to).
///
/// A channel URI comes from the registry, i.e. from whoever registered a device. Sending to it
/// attaches the WNS access token, so a crafted handle could harvest the token. A channel is used
/// only if it is https and its host equals an allowed name or ends with "." + that name.
///
/// The authority is parsed here by hand and strictly, rather than with a URL parser, so that no
/// ambiguity between this check and the HTTP client's own parser can exist: anything unusual in
/// the authority (user info, backslashes, percent escapes, whitespace, non-ASCII) is refused.
public struct WNSChannelPolicy: Sendable, Equatable {
    /// Lowercased, without leading dots.
    public let allowedHosts: [String]

    public static let defaultAllowedHosts = ["notify.windows.com"]

    public init(allowedHosts: [String]) {
        self.allowedHosts = allowedHosts.map { entry in
            var h = entry.lowercased()
            while h.hasPrefix(".") { h.removeFirst() }
            return h
        }
    }

    /// A problem line per unusable `allowed_hosts` entry (an empty list allows nothing).
    public static func configProblems(_ hosts: [String]) -> [String] {
        if hosts.isEmpty { return ["providers.wns.allowed_hosts: empty, so no channel could ever be used"] }
        return hosts.compactMap { h in
            let bare = h.hasPrefix(".") ? String(h.dropFirst()) : h
            if bare.isEmpty || !bare.utf8.allSatisfy(isHostByte) || bare.hasPrefix(".") || bare.hasSuffix(".") {
                return "providers.wns.allowed_hosts: \"\(OAuthTokenEndpoint.clip(h))\" is not a host name (write e.g. \"notify.windows.com\")"
            }
            return nil
        }
    }

    public enum Verdict: Sendable, Equatable {
        case allowed(host: String)
        /// `reason` names at most the host, never the whole URI (it carries the channel token).
        case denied(reason: String)
    }

    public func check(_ uri: String) -> Verdict {
        let scheme = "https://"
        guard uri.utf8.count > scheme.utf8.count,
              uri.prefix(scheme.count).lowercased() == scheme else {
            return .denied(reason: "channel URI is not https")
        }
        let rest = uri.dropFirst(scheme.count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty, authority.utf8.allSatisfy({ Self.isHostByte($0) || $0 == UInt8(ascii: ":") }) else {
            return .denied(reason: "channel URI has an unusable host part")
        }
        guard uri.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }) else {
            return .denied(reason: "channel URI contains characters a URI cannot have")
        }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, let hostPart = parts.first, !hostPart.isEmpty else {
            return .denied(reason: "channel URI has an unusable host part")
        }
        if parts.count == 2, !(parts[1].allSatisfy(\.isNumber) && !parts[1].isEmpty && parts[1].count <= 5) {
            return .denied(reason: "channel URI has an unusable port")
        }
        var host = hostPart.lowercased()
        if host.hasSuffix(".") { host.removeLast() }   // "notify.windows.com." is the same name
        for allowed in allowedHosts where host == allowed || host.hasSuffix("." + allowed) {
            return .allowed(host: host)
        }
        return .denied(reason: "channel host \(host) is not in allowed_hosts")
    }

    private static func isHostByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }
}
