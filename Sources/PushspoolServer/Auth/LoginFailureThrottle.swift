import PushspoolKit
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Caps password guessing per client address: after `limit` failed checks within `window`
/// seconds (counted from the first), the address is turned away until that window ends, even
/// with a right password, so that a guesser gets at most `limit` tries a window.
///
/// IPv6 clients are counted by their /64 (one customer's usual allocation): otherwise a single
/// host could rotate through 2^64 addresses. Memory is bounded: past `capacity` addresses the
/// ones no longer throttled are dropped first, then the oldest.
final class LoginFailureThrottle: Sendable {
    private struct Window {
        var start: Double
        var failures: Int
    }

    let limit: Int
    let window: Double
    let capacity: Int
    private let windows = Mutex<[String: Window]>([:])

    init(limit: Int = 10, window: Double = 60, capacity: Int = 100_000) {
        self.limit = limit
        self.window = window
        self.capacity = capacity
    }

    /// Seconds until `remote` may try again, or nil when it may now.
    func retryAfter(_ remote: String, now: Double) -> Int? {
        let key = Self.key(remote)
        return windows.withLock { map in
            guard let w = map[key], w.failures >= limit, now - w.start < window else { return nil }
            return max(1, Int((w.start + window - now).rounded(.up)))
        }
    }

    func recordFailure(_ remote: String, now: Double) {
        let key = Self.key(remote)
        windows.withLock { map in
            if let w = map[key], now - w.start < window {
                map[key]?.failures = w.failures + 1
                return
            }
            if map.count >= capacity && map[key] == nil { evict(&map, now: now) }
            map[key] = Window(start: now, failures: 1)
        }
    }

    var count: Int { windows.withLock { $0.count } }

    private func evict(_ map: inout [String: Window], now: Double) {
        map = map.filter { now - $0.value.start < window }
        let target = capacity * 9 / 10
        guard map.count > target else { return }
        // Throttled addresses are kept longest: dropping them would reopen guessing.
        let keep = map.sorted { a, b in
            let ta = a.value.failures >= limit, tb = b.value.failures >= limit
            return ta != tb ? ta : a.value.start > b.value.start
        }.prefix(target)
        map = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
    }

    /// The counting key of an address: an IPv4 address as is, an IPv6 address as its /64, a
    /// port (`1.2.3.4:5678`, `[::1]:5678`) dropped; anything else as given.
    static func key(_ remote: String) -> String {
        // The common case, an IPv4 address without a port, is used as is: no allocation.
        if !remote.utf8.contains(UInt8(ascii: ":")) { return remote }
        var host = Substring(remote)
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            host = host[host.index(after: host.startIndex)..<close]
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            host = host[..<colon]
        }
        var v6 = in6_addr()
        guard host.contains(":"), inet_pton(AF_INET6, String(host), &v6) == 1 else { return String(host) }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        // An IPv4 client on a dual-stack socket (::ffff:a.b.c.d) is that IPv4 address.
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12...].map(String.init).joined(separator: ".")
        }
        return bytes[0..<8].map { String(format: "%02x", $0) }.joined() + "::/64"
    }
}
