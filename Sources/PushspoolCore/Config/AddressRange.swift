#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An address or a CIDR block (`10.0.0.0/8`, `192.0.2.7`, `2001:db8::/32`, `::1`), as
/// `http.trusted_proxies` lists them. An IPv4 client seen on a dual-stack socket as
/// `::ffff:a.b.c.d` matches the IPv4 entries.
public struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    /// 4 or 16 bytes, the bits past `prefix` zero.
    public let network: [UInt8]
    public let prefix: Int

    /// nil when `text` is not an address or an address/prefix-length.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = Self.bytes(String(parts[0])) else { return nil }
        let bits = bytes.count * 8
        var length = bits
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].utf8.allSatisfy({ (48...57).contains($0) }), parts[1].count <= 3,
                  let n = Int(parts[1]), n <= bits else { return nil }
            length = n
        }
        prefix = length
        network = Self.masked(bytes, length)
    }

    /// Whether `address` (text, as the server reports a client) is in the range.
    public func contains(_ address: String) -> Bool {
        guard var bytes = Self.bytes(address) else { return false }
        if network.count == 4, bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            bytes = Array(bytes[12...])
        }
        return bytes.count == network.count && Self.masked(bytes, prefix) == network
    }

    public var description: String {
        var text = [CChar](repeating: 0, count: 64)
        _ = network.withUnsafeBytes { inet_ntop(network.count == 4 ? AF_INET : AF_INET6, $0.baseAddress, &text, 64) }
        let address = String(decoding: text.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
        return prefix == network.count * 8 ? address : "\(address)/\(prefix)"
    }

    /// An IPv4 or IPv6 address's bytes (IPv6 without a zone), nil for anything else.
    public static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    private static func masked(_ bytes: [UInt8], _ prefix: Int) -> [UInt8] {
        bytes.enumerated().map { i, b in
            let keep = min(8, max(0, prefix - i * 8))
            return keep == 8 ? b : b & UInt8(truncatingIfNeeded: 0xFF << (8 - keep))
        }
    }
}
