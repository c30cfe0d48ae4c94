import PushspoolCore
import PushspoolHTTP

/// Which WNS channel URIs pushspool will POST to (and so hand its bearer token to).
///
/// A channel URI comes from the registry, i.e. from whoever registered a device. Sending to it
/// attaches the WNS access token, so a crafted handle could harvest the token. A channel is used
/// only if it is https and its host and port pass `allowed_hosts` (`HostAllowList`).
///
/// The authority is parsed here by hand and strictly, rather than with a URL parser, so that no
/// ambiguity between this check and the HTTP client's own parser can exist: anything unusual in
/// the authority (user info, backslashes, percent escapes, whitespace) is refused. Hosts and
/// entries are compared in their ASCII form (`IDNA`): `bücher.example` and `xn--bcher-kva.example`
/// are one host, and a name that is not valid IDNA is refused.
public struct WNSChannelPolicy: Sendable, Equatable {
    /// As configured.
    public let allowedHosts: [String]
    /// Which hosts on which ports (`HostAllowList`: lower case, no trailing dot, default names 443 only).
    public let list: HostAllowList

    public static let defaultAllowedHosts = ["notify.windows.com"]

    /// `wellKnown`: the provider's default list, whose names are served on 443 only.
    public init(allowedHosts: [String], wellKnown: [String] = WNSChannelPolicy.defaultAllowedHosts) {
        self.allowedHosts = allowedHosts
        // An entry that is not valid IDNA is left out (`configProblems` names it).
        list = HostAllowList(allowedHosts.compactMap { try? Self.asciiEntry($0).get() }, wellKnown: wellKnown)
    }

    /// An entry (`[.]host[:port]`) with its host in ASCII form.
    static func asciiEntry(_ entry: String) -> Result<String, IDNAError> {
        let dots = entry.prefix { $0 == "." }
        var rest = entry.dropFirst(dots.count)
        var port = ""
        if let colon = rest.lastIndex(of: ":") {
            port = String(rest[colon...])
            rest = rest[..<colon]
        }
        return IDNA.ascii(String(rest)).map { dots + $0 + port }
    }

    /// A problem line per unusable `allowed_hosts` entry (an empty list allows nothing).
    public static func configProblems(_ hosts: [String]) -> [String] {
        if hosts.isEmpty { return ["providers.wns.allowed_hosts: empty, so no channel could ever be used"] }
        return hosts.compactMap { h in
            let problem: String?
            switch asciiEntry(h) {
            case .success(let ascii): problem = HostAllowList.entryProblem(ascii)
            case .failure(let e): problem = "is not a valid internationalised host name (IDNA: \(e.reason))"
            }
            return problem.map { "providers.wns.allowed_hosts: \"\(OAuthTokenEndpoint.clip(h))\" \($0)" }
        }
    }

    /// The connect-time check for a client that posts to these channels: every address is
    /// refused when not public (`AddressGuard`), unless the host matches an entry the operator
    /// added (or is one of `alsoExempt`, e.g. the operator's token endpoint).
    public func addressGuard(alsoExempt: Set<String> = []) -> AddressGuard {
        let list = list
        return AddressGuard { host in alsoExempt.contains(host.lowercased()) || list.isOperatorListed(host) }
    }

    /// `uri` with its host in ASCII form (`IDNA`), as it is checked and as it is to be requested;
    /// anything but an https URI is returned as given (`check` refuses it).
    func asciiURI(_ uri: String) -> Result<String, IDNAError> {
        let scheme = "https://"
        guard uri.utf8.count > scheme.utf8.count, uri.prefix(scheme.count).lowercased() == scheme else { return .success(uri) }
        let rest = uri.dropFirst(scheme.count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host = authority.prefix { $0 != ":" }
        return IDNA.ascii(String(host)).map { ascii in
            ascii == host ? uri : String(uri.prefix(scheme.count)) + ascii + rest.dropFirst(host.count)
        }
    }

    public enum Verdict: Sendable, Equatable {
        case allowed(host: String)
        /// `reason` names at most the host, never the whole URI (it carries the channel token).
        case denied(reason: String)
    }

    public func check(_ given: String) -> Verdict {
        let scheme = "https://"
        guard given.utf8.count > scheme.utf8.count,
              given.prefix(scheme.count).lowercased() == scheme else {
            return .denied(reason: "channel URI is not https")
        }
        let uri: String
        switch asciiURI(given) {
        case .success(let ascii): uri = ascii
        case .failure(let e): return .denied(reason: "channel host is not a valid internationalised host name (IDNA: \(e.reason))")
        }
        let rest = uri.dropFirst(scheme.count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty, authority.utf8.allSatisfy({ HostAllowList.isHostByte($0) || $0 == UInt8(ascii: ":") }) else {
            return .denied(reason: "channel URI has an unusable host part")
        }
        guard uri.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }) else {
            return .denied(reason: "channel URI contains characters a URI cannot have")
        }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, let hostPart = parts.first, let host = HostAllowList.normalised(hostPart) else {
            return .denied(reason: "channel URI has an unusable host part")
        }
        var port = 443
        if parts.count == 2 {
            guard let p = HostAllowList.port(parts[1]) else { return .denied(reason: "channel URI has an unusable port") }
            port = p
        }
        switch list.verdict(host: host, port: port) {
        case .allowed: return .allowed(host: host)
        case .hostNotListed: return .denied(reason: "channel host \(host) is not in allowed_hosts")
        case .portNotAllowed(let ports):
            return .denied(reason: "channel host \(host) is allowed on port \(ports.map(String.init).joined(separator: ", ")) only, not \(port)")
        }
    }
}
