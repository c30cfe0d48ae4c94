/// `http.listen` taken apart: `host:port`, `[v6]:port` or `:port` (every address).
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// A host name, an IPv4 address or (without its brackets) an IPv6 address; nil: every address.
    public var host: String?
    public var port: UInt16

    public init(host: String?, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Nil when `text` is none of the three forms or the port is not 0–65535 (0: the kernel picks
    /// a free port, which `serve` logs as it starts).
    public init?(_ text: String) {
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            // `[v6]:port`: the brackets keep the address's own colons apart from the port's.
            guard let close = text.firstIndex(of: "]"), text[close...].hasPrefix("]:") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
            guard host.contains(":"), host.utf8.allSatisfy({ Self.isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") })
            else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
            // A bare IPv6 address would be ambiguous (`::1:8080`): it needs brackets.
            guard !host.contains(":"), host.utf8.allSatisfy({ Self.isHostByte($0) }),
                  !host.hasPrefix("."), !host.hasPrefix("-") else { return nil }
        }
        guard !port.isEmpty, port.utf8.count <= 5, port.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let number = Int(port), (0...65_535).contains(number) else { return nil }
        self.host = host.isEmpty ? nil : String(host)
        self.port = UInt16(number)
    }

    /// `host:port` again, brackets around an IPv6 address; `:port` for every address.
    public var description: String {
        guard let host else { return ":\(port)" }
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    static func isHexDigit(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b)
    }

    /// Letters, digits, `.` and `-`: host names and IPv4 addresses.
    static func isHostByte(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b)
            || b == UInt8(ascii: ".") || b == UInt8(ascii: "-")
    }
}
