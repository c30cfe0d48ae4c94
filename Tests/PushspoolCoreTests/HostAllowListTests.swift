import Testing
import PushspoolCore

/// The `allowed_hosts` decision table: host, port, and the default list's 443-only rule.
@Suite struct HostAllowListTests {
    static let browsers = ["fcm.googleapis.com", "updates.push.services.mozilla.com", "notify.windows.com", "push.apple.com"]
    static let list = HostAllowList(browsers + ["push.example.net:8443", "selfhosted.example", ".Other.Example.", "Fcm.GoogleAPIs.com.:9000"],
                                    wellKnown: browsers)

    static let table: [(String, String, Int, HostAllowList.Verdict)] = [
        ("a browser service on 443", "fcm.googleapis.com", 443, .allowed),
        ("a subdomain of one", "web.push.apple.com", 443, .allowed),
        ("the default list is 443 only", "updates.push.services.mozilla.com", 8443, .portNotAllowed(allowed: [443])),
        ("an entry with a port adds that port", "fcm.googleapis.com", 9000, .allowed),
        ("…and no other", "fcm.googleapis.com", 8443, .portNotAllowed(allowed: [443, 9000])),
        ("the operator's port", "push.example.net", 8443, .allowed),
        ("not another", "push.example.net", 443, .portNotAllowed(allowed: [8443])),
        ("an entry without a port: any port", "selfhosted.example", 61234, .allowed),
        ("entries are lowercased, dots trimmed", "a.other.example", 443, .allowed),
        ("hosts too", "FCM.GoogleAPIs.COM.", 443, .allowed),
        ("a trailing dot is the same name", "localhost.", 443, .hostNotListed),
        ("a suffix trick", "fcm.googleapis.com.evil.example", 443, .hostNotListed),
        ("a name glued on", "evilpush.apple.com", 443, .hostNotListed),
        ("not ASCII", "fcm.googleapis.cöm", 443, .hostNotListed),
        ("two dots", "a..push.apple.com", 443, .hostNotListed),
    ]

    @Test(arguments: table.indices) func decides(index: Int) {
        let (name, host, port, expected) = Self.table[index]
        #expect(Self.list.verdict(host: host, port: port) == expected, "\(name)")
    }

    @Test func aDefaultNameWithoutTheDefaultListIsAnOperatorsEntry() {
        // WNS's list does not make a browser service 443-only, and vice versa.
        let wns = HostAllowList(["fcm.googleapis.com"], wellKnown: ["notify.windows.com"])
        #expect(wns.verdict(host: "fcm.googleapis.com", port: 8443) == .allowed)
        let web = HostAllowList(["notify.windows.com"], wellKnown: ["notify.windows.com"])
        #expect(web.verdict(host: "wns2.notify.windows.com", port: 444) == .portNotAllowed(allowed: [443]))
    }

    @Test func entryProblems() {
        for ok in ["push.example.net", "push.example.net:8443", ".example.test", "127.0.0.1", "Example.TEST.", "xn--bcher-kva.example"] {
            #expect(HostAllowList.entryProblem(ok) == nil, "\(ok)")
        }
        for bad in ["", "https://push.example.net", "a/b", "push.example.net:0", "push.example.net:70000", "host:", "a:1:2", "a..b", "[::1]"] {
            #expect(HostAllowList.entryProblem(bad)?.hasPrefix("is not a host name") == true, "\(bad)")
        }
        #expect(HostAllowList.entryProblem("bücher.example")?.contains("xn--") == true)
    }
}
