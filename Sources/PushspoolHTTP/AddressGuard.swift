import CCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Refuses, at connect time, addresses that are not on the public internet: loopback, private
/// (RFC 1918), CGNAT, link-local, multicast, unspecified, IPv4-mapped and unique-local IPv6.
///
/// URLs that came from whoever registered a device (Web Push endpoints, WNS channels) are first
/// checked by name against `allowed_hosts`; this check is on the address the name resolved to,
/// read where the socket is opened, so a name that resolves to a public address when it is
/// checked and to 127.0.0.1 when it is connected to (DNS rebinding) is still refused. A host the
/// operator vouched for (`exempt`: a self-hosted push service on an internal address) is not
/// checked.
public struct AddressGuard: Sendable {
    /// Hosts (as in the URL, lower case) whose addresses are not checked.
    public let exempt: @Sendable (String) -> Bool

    public init(exempt: @escaping @Sendable (String) -> Bool) { self.exempt = exempt }

    /// Why a connection to `address` (of `host`) is refused, nil when it may go ahead. The text
    /// names the host and the address, never the URL (its path carries the device's secret).
    func refusal(host: String, address: UnsafePointer<sockaddr>) -> String? {
        guard let (text, kind) = Self.classify(address) else { return nil }
        return "address \(text) of \(host) is \(kind) (refused: only hosts the operator lists in allowed_hosts may be on such addresses)"
    }

    /// The address as text and what kind of non-public address it is; nil for a public address.
    /// An address family other than IPv4 or IPv6 counts as non-public.
    static func classify(_ address: UnsafePointer<sockaddr>) -> (String, String)? {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                var a = sin.pointee.sin_addr
                let bytes = withUnsafeBytes(of: &a) { Array($0) }
                return kind(ipv4: bytes).map { (text(family: AF_INET, &a), $0) }
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                var a = sin6.pointee.sin6_addr
                let bytes = withUnsafeBytes(of: &a) { Array($0) }
                return kind(ipv6: bytes).map { (text(family: AF_INET6, &a), $0) }
            }
        default:
            return ("of family \(address.pointee.sa_family)", "not an internet address")
        }
    }

    private static func text<T>(family: Int32, _ a: inout T) -> String {
        var buf = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        _ = inet_ntop(family, &a, &buf, socklen_t(buf.count))
        return String(decoding: buf.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
    }

    /// What kind of non-public IPv4 address `b` (4 bytes, network order) is; nil when public.
    public static func kind(ipv4 b: [UInt8]) -> String? {
        guard b.count == 4 else { return "malformed" }
        switch (b[0], b[1]) {
        case (0, _): return "unspecified (0.0.0.0/8)"
        case (10, _): return "private (10.0.0.0/8)"
        case (100, 64...127): return "shared carrier-grade NAT (100.64.0.0/10)"
        case (127, _): return "loopback (127.0.0.0/8)"
        case (169, 254): return "link-local (169.254.0.0/16)"
        case (172, 16...31): return "private (172.16.0.0/12)"
        case (192, 168): return "private (192.168.0.0/16)"
        case (192, 0) where b[2] == 0: return "reserved for protocol assignments (192.0.0.0/24)"
        case (198, 18...19): return "reserved for benchmarking (198.18.0.0/15)"
        case (224...239, _): return "multicast (224.0.0.0/4)"
        case (240...255, _): return "reserved (240.0.0.0/4)"
        default: return nil
        }
    }

    /// What kind of non-public IPv6 address `b` (16 bytes) is; nil when public. Forms that embed
    /// an IPv4 address (mapped, compatible, NAT64, 6to4) are refused when that address would be.
    public static func kind(ipv6 b: [UInt8]) -> String? {
        guard b.count == 16 else { return "malformed" }
        let zeros10 = b[0..<10].allSatisfy { $0 == 0 }
        if zeros10 && b[10] == 0 && b[11] == 0 {
            if b[12..<15].allSatisfy({ $0 == 0 }) && b[15] == 0 { return "unspecified (::)" }
            if b[12..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return "loopback (::1)" }
            return "IPv4-compatible (::/96)"
        }
        if zeros10 && b[10] == 0xFF && b[11] == 0xFF { return "IPv4-mapped (::ffff:0:0/96)" }
        if b[0] & 0xFE == 0xFC { return "unique local (fc00::/7)" }
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return "link-local (fe80::/10)" }
        if b[0] == 0xFE && b[1] & 0xC0 == 0xC0 { return "site-local (fec0::/10)" }
        if b[0] == 0xFF { return "multicast (ff00::/8)" }
        // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 address they embed.
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B, b[4..<12].allSatisfy({ $0 == 0 }),
           let inner = kind(ipv4: Array(b[12..<16])) {
            return "NAT64 of an address that is \(inner)"
        }
        if b[0] == 0x20, b[1] == 0x02, let inner = kind(ipv4: Array(b[2..<6])) { return "6to4 of an address that is \(inner)" }
        return nil
    }
}
