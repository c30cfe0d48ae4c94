/// One entry of `webhooks` (README "Webhooks"): where pushspool posts signed events about jobs
/// and devices. A webhook URL is configuration only, never taken from a job or a request, which
/// would let anyone make pushspool post anywhere.
public struct WebhookConfig: Sendable {
    public enum Event: String, Sendable, CaseIterable {
        /// A job ended: its summary, as the result log's summary line has it.
        case jobFinished = "job.finished"
        /// Devices a service reported gone were removed from the registry (batches of up to 1,000).
        case deviceUnregistered = "device.unregistered"
    }

    /// `https://…`, or `http://` to a loopback address (a receiver on the same host, tests).
    public var url: String
    /// The HMAC-SHA256 key of `Pushspool-Signature`: printed as `***`, never logged.
    public var secret: Secret
    public var events: [Event]
    /// Only events about these apps; nil: every app.
    public var apps: [String]?
    /// `private_addresses`: the URL's host may resolve to a private address (an internal
    /// receiver). Off by default: a host that resolves to 10.x or 169.254.x is refused when
    /// connecting, as for Web Push endpoints. A loopback address written in the URL is allowed.
    public var privateAddresses = false

    public init(url: String, secret: Secret, events: [Event], apps: [String]? = nil) {
        self.url = url
        self.secret = secret
        self.events = events
        self.apps = apps
    }

    /// Whether this webhook gets `event` about `about` (a job's apps, a device's app).
    public func wants(_ event: Event, about: [String]) -> Bool {
        guard events.contains(event) else { return false }
        guard let apps else { return true }
        return about.contains { apps.contains($0) }
    }

    /// The URL's scheme, host (lower case, IPv6 without brackets) and port; nil when it is not
    /// an http(s) URL with a plain host part (no user info, no escapes).
    public static func parts(_ url: String) -> (https: Bool, host: String, port: Int)? {
        let lower = url.lowercased()
        let https: Bool
        if lower.hasPrefix("https://") { https = true } else if lower.hasPrefix("http://") { https = false } else { return nil }
        guard url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }) else { return nil }
        let rest = url.dropFirst(https ? 8 : 7)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty, !authority.contains("@"), !authority.contains("%") else { return nil }
        var host: Substring, portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty { guard after.hasPrefix(":") else { return nil }; portText = after.dropFirst() }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
        } else {
            let pieces = authority.split(separator: ":", omittingEmptySubsequences: false)
            guard pieces.count <= 2 else { return nil }
            host = pieces[0]
            if pieces.count == 2 { portText = pieces[1] }
            guard HostAllowList.normalised(host) != nil else { return nil }
        }
        var port = https ? 443 : 80
        if let portText { guard let p = HostAllowList.port(portText) else { return nil }; port = p }
        return (https, host.lowercased(), port)
    }

    /// Whether `host` (as `parts` gives it) names the loopback interface itself.
    public static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
