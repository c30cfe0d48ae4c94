import Foundation
@testable import PushspoolHTTP
import PushspoolCore
import Testing
@testable import PushspoolKit

/// The connect-time address check under Web Push endpoints and WNS channels: which addresses are
/// not public, and both transports refusing them where the socket is opened.
struct AddressGuardTests {
    static func v4(_ text: String) -> [UInt8] {
        var a = in_addr()
        #expect(inet_pton(AF_INET, text, &a) == 1)
        return withUnsafeBytes(of: &a) { Array($0) }
    }

    static func v6(_ text: String) -> [UInt8] {
        var a = in6_addr()
        #expect(inet_pton(AF_INET6, text, &a) == 1)
        return withUnsafeBytes(of: &a) { Array($0) }
    }

    @Test(arguments: ["0.0.0.0", "10.1.2.3", "100.64.0.1", "100.127.255.254", "127.0.0.1", "127.255.0.9", "169.254.169.254",
                      "172.16.0.1", "172.31.255.255", "192.168.1.1", "224.0.0.1", "239.255.255.250", "255.255.255.255", "192.0.0.8"])
    func nonPublicIPv4IsRefused(_ address: String) {
        #expect(AddressGuard.kind(ipv4: Self.v4(address)) != nil, "\(address)")
    }

    @Test(arguments: ["8.8.8.8", "142.250.74.42", "100.63.255.255", "100.128.0.1", "172.15.0.1", "172.32.0.1", "169.253.1.1", "192.169.0.1"])
    func publicIPv4Passes(_ address: String) {
        #expect(AddressGuard.kind(ipv4: Self.v4(address)) == nil, "\(address)")
    }

    @Test(arguments: ["::", "::1", "::ffff:127.0.0.1", "::ffff:8.8.8.8", "::127.0.0.1", "fc00::1", "fd12:3456::1", "fe80::1",
                      "febf::1", "fec0::1", "ff02::1", "64:ff9b::10.0.0.1", "2002:7f00:1::1", "2002:a9fe:a9fe::1"])
    func nonPublicIPv6IsRefused(_ address: String) {
        #expect(AddressGuard.kind(ipv6: Self.v6(address)) != nil, "\(address)")
    }

    @Test(arguments: ["2a00:1450:4001:80b::200a", "2001:db9::1", "64:ff9b::8.8.8.8", "2002:808:808::1", "fbff::1", "fe7f::1"])
    func publicIPv6Passes(_ address: String) {
        #expect(AddressGuard.kind(ipv6: Self.v6(address)) == nil, "\(address)")
    }

    @Test func theReasonNamesHostAndAddressOnly() {
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_addr = in_addr(s_addr: inet_addr("169.254.169.254"))
        let why = withUnsafePointer(to: &sin) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { AddressGuard { _ in false }.refusal(host: "evil.example", address: $0) }
        }
        #expect(why?.hasPrefix("address 169.254.169.254 of evil.example is link-local (169.254.0.0/16)") == true, "\(why ?? "nil")")
    }

    /// Operator entries exempt their hosts; the provider's default names never do.
    @Test func onlyTheOperatorsOwnEntriesAreExempt() {
        let policy = WebPushEndpointPolicy(allowedHosts: WebPushConfig.defaultAllowedHosts + ["push.example.net:8443", "LocalHost."])
        let exempt = policy.addressGuard.exempt
        #expect(!exempt("fcm.googleapis.com"))
        #expect(!exempt("x.updates.push.services.mozilla.com"))
        #expect(exempt("push.example.net"))
        #expect(exempt("a.push.example.net"))
        #expect(exempt("localhost"))
        #expect(!exempt("127.0.0.1"))
        let wns = WNSChannelPolicy(allowedHosts: ["notify.windows.com"]).addressGuard(alsoExempt: ["login.live.com"])
        #expect(!wns.exempt("db5.notify.windows.com"))
        #expect(wns.exempt("login.live.com"))
    }
}

/// Both transports against a fake on this machine, reached as `localhost` (the resolver's answer
/// is 127.0.0.1 or ::1): refused at connect, permanently, naming host and address and never the
/// path; the same request goes through when the host is exempt.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct AddressGuardTransportTests {
    static let caPEM = try? String(contentsOf: Paths.fixture("ca.pem"), encoding: .utf8)

    static func options(_ versions: HTTPVersionPolicy, exempt: Set<String>) -> HTTPClientOptions {
        var o = HTTPClientOptions(extraCAPEM: caPEM, versions: versions)
        o.addressGuard = AddressGuard { exempt.contains($0) }
        return o
    }

    static func check(_ versions: HTTPVersionPolicy, fake: FakeServer, path: String) throws {
        let url = "https://localhost:\(fake.port)\(path)"
        let refusing = try HTTPClients.make(options(versions, exempt: ["127.0.0.1"]))
        let refused = refusing.executeAndWait(HTTPRequest(url: url, body: Array("<toast/>".utf8), timeout: 10))
        refusing.shutdown()
        guard case .failure(let error) = refused else { Issue.record("a loopback address was connected to"); return }
        #expect(error.isPermanent)
        #expect(error.message.contains("of localhost is loopback"), "\(error.message)")
        #expect(!error.message.contains("secret-path"), "\(error.message)")

        let exempting = try HTTPClients.make(options(versions, exempt: ["localhost"]))
        let response = try exempting.executeAndWait(HTTPRequest(url: url, body: Array("<toast/>".utf8), timeout: 10)).get()
        exempting.shutdown()
        #expect((400..<500).contains(response.status), "the fake answers an unauthenticated request: \(response.status)")
    }

    @Test func http2RefusesLoopbackAtConnect() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", dir: dir)
        try Self.check(.http2Only, fake: fake, path: "/3/device/secret-path")
    }

    @Test func http1RefusesLoopbackAtConnect() throws {
        let dir = TempDir()
        let fake = try FakeServer("wns", dir: dir)
        try Self.check(.http1, fake: fake, path: "/ch/secret-path")
    }
}
