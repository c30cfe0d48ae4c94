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
        #expect(c.routes == [.apns: "sandbox", .fcm: "sandbox", .wns: "sandbox", .web: "sandbox"])
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
        #expect(c.routes == [.apns: "apns", .fcm: "azure", .wns: "wns", .web: "sandbox"])
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
        #expect(!config.routes.isEmpty)
    }
}
