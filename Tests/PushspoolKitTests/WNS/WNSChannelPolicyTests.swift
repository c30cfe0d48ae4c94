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

    /// Entries and hosts are compared in their IDNA (xn--) form, whichever form each is written in.
    @Test func internationalisedNamesMatchTheirASCIIForm() throws {
        let unicodeEntry = WNSChannelPolicy(allowedHosts: ["Bücher.example"])
        #expect(unicodeEntry.check("https://xn--bcher-kva.example/ch/1") == .allowed(host: "xn--bcher-kva.example"))
        #expect(unicodeEntry.check("https://push.XN--BCHER-KVA.example.:8443/ch/1") == .allowed(host: "push.xn--bcher-kva.example"))
        #expect(unicodeEntry.check("https://bucher.example/ch/1") == .denied(reason: "channel host bucher.example is not in allowed_hosts"))
        let asciiEntry = WNSChannelPolicy(allowedHosts: [".xn--bcher-kva.example:8443"])
        #expect(asciiEntry.check("https://bücher.example:8443/ch/1?token=x") == .allowed(host: "xn--bcher-kva.example"))
        #expect(try asciiEntry.asciiURI("https://bücher.example:8443/ch/1?token=x").get() == "https://xn--bcher-kva.example:8443/ch/1?token=x")
        #expect(asciiEntry.check("https://bücher.example/ch/1")
                == .denied(reason: "channel host xn--bcher-kva.example is allowed on port 8443 only, not 443"))
        #expect(asciiEntry.check("https://☃.example/ch/1")
                == .denied(reason: "channel host is not a valid internationalised host name (IDNA: string contains a disallowed character)"))
    }

    @Test func invalidInternationalisedEntriesAreNamed() {
        #expect(WNSChannelPolicy.configProblems(["notify.windows.com", "bücher.example", "xn--bcher-kva.example:8443"]).isEmpty)
        #expect(WNSChannelPolicy.configProblems(["xn--zz.example"])
                == [#"providers.wns.allowed_hosts: "xn--zz.example" is not a valid internationalised host name (IDNA: string contains invalid punycode data)"#])
        #expect(WebPushEndpointPolicy.configProblems(["fcm.googleapis.com", "☃.net"])
                == [#"providers.webpush.allowed_hosts: "☃.net" is not a valid internationalised host name (IDNA: string contains a disallowed character)"#])
        // The invalid entry allows nothing.
        #expect(WNSChannelPolicy(allowedHosts: ["xn--zz.example"]).check("https://xn--zz.example/")
                == .denied(reason: "channel host is not a valid internationalised host name (IDNA: string contains invalid punycode data)"))
    }

    @Test func configProblems() {
        #expect(WNSChannelPolicy.configProblems(["notify.windows.com", "127.0.0.1"]).isEmpty)
        #expect(WNSChannelPolicy.configProblems([]).count == 1)
        #expect(WNSChannelPolicy.configProblems(["https://notify.windows.com", "", "a/b"]).count == 3)
    }
}
