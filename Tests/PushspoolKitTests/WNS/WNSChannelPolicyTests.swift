import Testing
@testable import PushspoolKit

/// The channel allow-list: a registry handle must never make pushspool send its token elsewhere.
@Suite struct WNSChannelPolicyTests {
    static let policy = WNSChannelPolicy(allowedHosts: ["notify.windows.com"])

    static let allowed: [String] = [
        "https://dm3p.notify.windows.com/?token=AwYAAAD",
        "https://wns2-by3p.notify.windows.com/w/?token=abc%2Bdef",
        "HTTPS://DM3P.NOTIFY.WINDOWS.COM/?token=x",
        "https://dm3p.notify.windows.com:443/?token=x",
        "https://notify.windows.com/?token=x",
        "https://dm3p.notify.windows.com./?token=x",
    ]

    @Test(arguments: allowed)
    func allows(_ uri: String) {
        guard case .allowed = Self.policy.check(uri) else {
            Issue.record("denied \(uri)")
            return
        }
    }

    static let denied: [(String, String)] = [
        ("http://dm3p.notify.windows.com/?token=x", "channel URI is not https"),
        ("https://evil.example/?token=x", "channel host evil.example is not in allowed_hosts"),
        ("https://notify.windows.com.evil.example/x", "channel host notify.windows.com.evil.example is not in allowed_hosts"),
        ("https://evilnotify.windows.com/x", "channel host evilnotify.windows.com is not in allowed_hosts"),
        ("https://dm3p.notify.windows.com@evil.example/x", "channel URI has an unusable host part"),
        ("https://evil.example\\@dm3p.notify.windows.com/", "channel URI has an unusable host part"),
        ("https://evil.example%2F.notify.windows.com/", "channel URI has an unusable host part"),
        ("https://dm3p.notify.windows.com:99999999/", "channel URI has an unusable port"),
        ("https://dm3p.notify.windows.com/ x", "channel URI contains characters a URI cannot have"),
        ("https:///?token=x", "channel URI has an unusable host part"),
        ("ms-app://s-1-15/x", "channel URI is not https"),
        ("", "channel URI is not https"),
    ]

    @Test(arguments: denied)
    func denies(_ uri: String, _ reason: String) {
        #expect(Self.policy.check(uri) == .denied(reason: reason))
    }

    @Test func exactHostsAndLeadingDotsInConfig() {
        let p = WNSChannelPolicy(allowedHosts: ["127.0.0.1", ".Example.Test"])
        #expect(p.check("https://127.0.0.1:8443/ch/1") == .allowed(host: "127.0.0.1"))
        #expect(p.check("https://a.example.test/") == .allowed(host: "a.example.test"))
        #expect(p.check("https://localhost:8443/ch/1") == .denied(reason: "channel host localhost is not in allowed_hosts"))
        #expect(p.check("https://1127.0.0.1/") == .denied(reason: "channel host 1127.0.0.1 is not in allowed_hosts"))
    }

    @Test func configProblems() {
        #expect(WNSChannelPolicy.configProblems(["notify.windows.com", "127.0.0.1"]).isEmpty)
        #expect(WNSChannelPolicy.configProblems([]).count == 1)
        #expect(WNSChannelPolicy.configProblems(["https://notify.windows.com", "", "a/b"]).count == 3)
    }
}
