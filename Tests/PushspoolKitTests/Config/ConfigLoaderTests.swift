import Foundation
import Testing
@testable import PushspoolKit
import PushspoolCore

@Suite struct ConfigLoaderTests {
    func parse(_ text: String, env: [String: String] = [:]) throws(ConfigError) -> Config {
        try ConfigLoader.parse(try! JSONParser.parse(text), environment: env)
    }

    @Test("no file: sandbox for every platform, the documented defaults")
    func defaults() throws {
        let c = try parse("{}")
        #expect(c.routes == [.apns: "sandbox", .fcm: "sandbox", .wns: "sandbox", .web: "sandbox", .hms: "sandbox", .adm: "sandbox"])
        #expect(c.concurrency == 256)
        #expect(c.retry == RetryPolicy(maxAttempts: 6, baseDelay: 0.25, maxDelay: 300))
        #expect(c.spool == "jobs")
        #expect(c.registryPath == "jobs/registry.sqlite")
    }

    @Test("the README example parses, env: values resolve, routes default to same-name providers")
    func specExample() throws {
        let c = try parse("""
            {"spool": "jobs", "registry": "jobs/registry.sqlite", "concurrency": 64,
             "retry": {"max_attempts": 3, "base_delay_ms": 100, "max_delay_ms": 5000},
             "routes": {"apns": "apns", "gcm": "azure", "wns": "wns"},
             "providers": {
               "apns": {"team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "AuthKey.p8", "topic": "com.example.app", "environment": "sandbox", "endpoint": null},
               "wns": {"client_id": "ms-app://s-1", "client_secret": "env:WNS_SECRET", "allowed_hosts": ["notify.windows.com"]},
               "azure": {"connection_string": "env:NH", "hub": "myhub"},
               "sandbox": {"outbox": "out"}},
             "tls": {"ca_file": "ca.pem"}}
            """, env: ["WNS_SECRET": "s3cret", "NH": "Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=v"])
        #expect(c.routes == [.apns: "apns", .fcm: "azure", .wns: "wns", .web: "sandbox", .hms: "sandbox", .adm: "sandbox"])
        #expect(c.apns?.baseURL == "https://api.sandbox.push.apple.com")
        #expect(c.wns?.clientSecret.value == "s3cret")
        #expect(c.retry.maxDelay == 5)
        #expect(c.tls.caFile == "ca.pem")
        let printed = c.redacted().encodedString
        #expect(!printed.contains("s3cret") && !printed.contains("SharedAccessKey=v"))
        #expect(printed.contains("***"))
    }

    @Test("every problem is reported at once, each naming its key")
    func allProblems() {
        do {
            _ = try parse("""
                {"concurency": 5, "concurrency": 0, "retry": {"max_attempts": "6"},
                 "routes": {"apns": "apn", "wns": "wns"},
                 "providers": {"apns": {"team_id": "T", "key_id": "K", "topic": "t", "environment": "prod"},
                               "wns": {"client_id": "c", "client_secret": "env:MISSING"}, "gcm": {}}}
                """)
            Issue.record("expected a ConfigError")
        } catch {
            #expect(error.problems.contains("concurency: unknown key (did you mean \"concurrency\"?)"))
            #expect(error.problems.contains("concurrency: must be an integer in 1…100000"))
            #expect(error.problems.contains("retry.max_attempts: must be an integer in 1…100"))
            #expect(error.problems.contains("providers.gcm: unknown key (did you mean \"fcm\"?)"))
            #expect(error.problems.contains("providers.apns.key_file: is required"))
            #expect(error.problems.contains("providers.apns.environment: must be \"production\" or \"sandbox\", got \"prod\""))
            #expect(error.problems.contains("providers.wns.client_secret: environment variable MISSING is not set"))
            #expect(error.problems.contains { $0.hasPrefix("routes.apns: unknown provider \"apn\"") })
            #expect(error.problems.count >= 8)
        }
    }

    @Test("a route to a provider without its section, or to another platform's provider, is an error")
    func routeProblems() {
        #expect(throws: ConfigError.self) { try parse(#"{"routes": {"apns": "apns"}}"#) }
        #expect(throws: ConfigError.self) {
            try parse(#"{"routes": {"wns": "fcm"}, "providers": {"fcm": {"service_account_file": "sa.json"}}}"#)
        }
    }
}

@Suite struct ExampleConfigTests {
    @Test("every example config parses", arguments: ["sandbox", "apns", "fcm", "wns", "azure", "webpush", "mixed", "several-hosts", "serve"])
    func parses(_ name: String) throws {
        let url = Paths.packageRoot.appendingPathComponent("examples/config/\(name).json")
        let json = try JSONParser.parse(Array(try Data(contentsOf: url)))
        let config = try ConfigLoader.parse(json, environment: ["PUSHSPOOL_REGISTRY": "postgresql://pushspool@db/pushspool", "WNS_CLIENT_SECRET": "x", "NH_CONNECTION_STRING": "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v"])
        #expect(Self.summary(config) == Self.expected[name], "examples/config/\(name).json read back")
    }

    /// What each example says, as read back from the parsed config: where the spool and registry
    /// are, the routes, and each configured provider's identifying settings.
    static func summary(_ c: Config) -> [String] {
        var lines = ["spool \(c.spool)", "registry \(c.registry ?? "-")", "concurrency \(c.concurrency)", "attempts \(c.retry.maxAttempts)"]
        lines += c.routes.sorted { $0.key.rawValue < $1.key.rawValue }.map { "route \($0.key.rawValue) \($0.value)" }
        if let a = c.apns { lines.append("apns \(a.teamID) \(a.keyID) \(a.keyFile) \(a.topic) \(a.environment) \(a.endpoint ?? "-")") }
        if let f = c.fcm { lines.append("fcm \(f.serviceAccountFile) \(f.endpoint ?? "-")") }
        if let w = c.wns { lines.append("wns \(w.clientID) \(w.allowedHosts)") }
        if let z = c.azure { lines.append("azure \(z.hub) \(z.fcmFormat)") }
        if let w = c.webpush { lines.append("webpush \(w.vapidPrivateKeyFile) \(w.subject) \(w.allowedHosts)") }
        if let o = c.sandbox.outbox { lines.append("sandbox \(o)") }
        if let t = c.metrics.textfile { lines.append("metrics \(t)") }
        if let h = c.http {
            lines.append("http \(h.listen) \(h.usersFile ?? "-") \(h.tokensFile ?? "-") \(h.usersMaySend) \(h.clientTagPrefixes)")
        }
        return lines
    }

    /// Unlisted platforms stay routed to the sandbox.
    static func routes(apns: String = "sandbox", fcm: String = "sandbox", web: String = "sandbox", wns: String = "sandbox") -> [String] {
        ["route adm sandbox", "route apns \(apns)", "route fcm \(fcm)", "route hms sandbox", "route web \(web)", "route wns \(wns)"]
    }
    static let production = ["spool /var/spool/pushspool", "registry -", "concurrency 256", "attempts 6"]
    static let apnsLine = "apns ABCDE12345 KEY1234567 /etc/pushspool/AuthKey_KEY1234567.p8 com.example.app production -"

    static let expected: [String: [String]] = [
        "sandbox": ["spool jobs", "registry -", "concurrency 64", "attempts 6"] + routes() + ["sandbox jobs/outbox"],
        "apns": production + routes(apns: "apns") + [apnsLine],
        "fcm": production + routes(fcm: "fcm") + ["fcm /etc/pushspool/service-account.json -"],
        "wns": production + routes(wns: "wns")
            + [#"wns ms-app://s-1-15-2-0000000000-0000000000-0000000000-0000000000-0000000000-0000000000-0000000000 ["notify.windows.com"]"#],
        "azure": production + routes(apns: "azure", fcm: "azure", wns: "azure") + ["azure myhub fcmV1"],
        "webpush": production + routes(web: "webpush")
            + [#"webpush vapid.pem mailto:ops@example.com ["fcm.googleapis.com", "updates.push.services.mozilla.com", "notify.windows.com", "push.apple.com"]"#],
        "mixed": production + routes(apns: "apns", fcm: "azure", wns: "azure") + [apnsLine, "azure myhub fcmV1"],
        "several-hosts": ["spool /var/spool/pushspool", "registry postgresql://pushspool@db/pushspool", "concurrency 256", "attempts 6"]
            + routes(apns: "apns") + [apnsLine],
        "serve": ["spool /var/spool/pushspool", "registry /var/spool/pushspool/registry.sqlite", "concurrency 256", "attempts 6"]
            + routes(apns: "apns", fcm: "fcm")
            + ["apns ABCDE12345 KEY1234567 AuthKey_KEY1234567.p8 com.example.app production -", "fcm service-account.json -",
               "metrics /var/lib/pushspool/pushspool.prom", #"http 127.0.0.1:8080 users.htpasswd tokens.txt true ["follows_", "location_"]"#],
    ]
}
