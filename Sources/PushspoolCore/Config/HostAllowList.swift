/// An `allowed_hosts` list (Web Push endpoints, WNS channels): which hosts, on which ports,
/// pushspool may POST a credential-bearing request to. The URL comes from whoever registered a
/// device, so a crafted one must not reach an internal service.
///
/// An entry is a host name, optionally with a leading `.` (the same meaning) and a `:port`. A host
/// matches an entry when it equals the name or ends with `.` + the name. Ports:
/// - a name of the provider's own default list (the browsers' push services, WNS) with no port
///   is served on 443 only, as those services are;
/// - any other entry names its port (`push.example.net:8443`), or allows every port when it names
///   none (a self-hosted push service, test fakes on ephemeral ports).
///
/// Host names are compared in one form: lower case, without the trailing dot of a fully
/// qualified name, ASCII. Internationalised names reach this list already in their IDNA form
/// (`xn--…`): the providers' policies convert entries and hosts with libidn2 first, and a
/// non-ASCII name that got here unconverted is refused.
public struct HostAllowList: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public let name: String
        /// nil: any port.
        public let port: Int?
        /// One of the provider's own default names (a public service), not one the operator added.
        public var wellKnown = false
    }

    public enum Verdict: Sendable, Equatable {
        case allowed
        case hostNotListed
        /// The host is listed, on other ports only.
        case portNotAllowed(allowed: [Int])
    }

    public let entries: [Entry]

    /// `configured` as written; `wellKnown` is the provider's default list, whose names are 443-only
    /// unless an entry names another port. Unusable entries (`entryProblem`) are left out.
    public init(_ configured: [String], wellKnown: [String]) {
        let known = Set(wellKnown.compactMap { Self.entry($0)?.name })
        entries = configured.compactMap { text in
            guard let e = Self.entry(text) else { return nil }
            guard known.contains(e.name) else { return e }
            return Entry(name: e.name, port: e.port ?? 443, wellKnown: true)
        }
    }

    /// May a request go to `host` (as in the URL) on `port`?
    public func verdict(host: String, port: Int) -> Verdict {
        guard let host = Self.normalised(host) else { return .hostNotListed }
        let matching = entries.filter { host == $0.name || host.hasSuffix("." + $0.name) }
        if matching.isEmpty { return .hostNotListed }
        if matching.contains(where: { $0.port == nil || $0.port == port }) { return .allowed }
        return .portNotAllowed(allowed: matching.compactMap(\.port))
    }

    /// Whether `host` matches an entry the operator added (not a default name): a host the
    /// operator vouches for, which may be on a private or loopback address (a self-hosted push
    /// service, a test fake). The default names are public services and are not exempt.
    public func isOperatorListed(_ host: String) -> Bool {
        guard let host = Self.normalised(host) else { return false }
        return entries.contains { !$0.wellKnown && (host == $0.name || host.hasSuffix("." + $0.name)) }
    }

    /// A host name as compared: lower case, one trailing dot removed; nil when it is not a plain
    /// ASCII name (letters, digits, `-`, `.`).
    public static func normalised<S: StringProtocol>(_ host: S) -> String? {
        var h = host.lowercased()
        if h.hasSuffix(".") { h.removeLast() }
        guard !h.isEmpty, !h.hasPrefix("."), !h.hasSuffix("."), !h.contains(".."), h.utf8.allSatisfy(isHostByte) else { return nil }
        return h
    }

    /// Why `entry` cannot be used, nil when it can (one phrase, no key prefix).
    public static func entryProblem(_ entry: String) -> String? {
        if entry.utf8.contains(where: { $0 >= 0x80 }) {
            return "is not an ASCII host name (convert an internationalised name to its IDNA form, xn--…, first)"
        }
        return Self.entry(entry) == nil ? "is not a host name with an optional :port (write e.g. \"push.example.net\" or \"push.example.net:8443\")" : nil
    }

    /// A port as written in a URL or an entry: 1–65535 in decimal digits.
    public static func port<S: StringProtocol>(_ text: S) -> Int? {
        guard !text.isEmpty, text.count <= 5, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let p = Int(text), (1...65535).contains(p) else { return nil }
        return p
    }

    private static func entry(_ text: String) -> Entry? {
        var t = Substring(text)
        while t.hasPrefix(".") { t = t.dropFirst() }
        let parts = t.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, let name = normalised(parts[0]) else { return nil }
        if parts.count == 2 {
            guard let p = port(parts[1]) else { return nil }
            return Entry(name: name, port: p)
        }
        return Entry(name: name, port: nil)
    }

    public static func isHostByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }
}
