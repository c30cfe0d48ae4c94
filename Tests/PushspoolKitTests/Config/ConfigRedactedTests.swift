import Foundation
import Testing
@testable import PushspoolKit
import PushspoolCore

@Suite struct ConfigRedactedTests {
    /// `config --check` printed `"base_delay_ms": 1001` as 1000 (1.001 × 1000 is just under 1001).
    @Test func retryDelaysPrintAsTheyWereWritten() throws {
        let c = try ConfigLoader.parse(try JSONParser.parse(#"{"retry": {"base_delay_ms": 1001, "max_delay_ms": 1003}}"#))
        let retry = c.redacted()["retry"]
        #expect(retry?["base_delay_ms"] == .int(1001))
        #expect(retry?["max_delay_ms"] == .int(1003))
    }

    @Test("the http section is printed only when configured, its files resolved against the config's folder")
    func httpSection() throws {
        var c = try ConfigLoader.parse(try JSONParser.parse("{}"))
        #expect(c.redacted()["http"] == nil)
        c = try ConfigLoader.parse(try JSONParser.parse(#"{"http": {"users_file": "users.htpasswd", "client_tag_prefixes": ["follows_"]}}"#))
        c.baseDirectory = URL(fileURLWithPath: "/etc/pushspool")
        let http = c.redacted()["http"]
        #expect(http?["listen"] == .string("127.0.0.1:8080"))
        #expect(http?["users_file"] == .string("/etc/pushspool/users.htpasswd"))
        #expect(http?["tokens_file"] == .null)
        #expect(http?["tls"]?["cert_file"] == .null)
        #expect(http?["client_tag_prefixes"] == .array([.string("follows_")]))
        #expect(http?["users_may_send"] == .bool(true))
        #expect(http?["max_connections"] == .int(4096))
        #expect(http?["request_timeout_seconds"] == .int(10))
    }

    /// `config --check` shows each HTTP provider's connection cap, the default included; the
    /// sandbox opens no connections and has none.
    @Test func maxConnectionsIsPrintedPerHTTPProvider() throws {
        let c = try ConfigLoader.parse(try JSONParser.parse("""
            {"providers": {"apns": {"team_id": "T", "key_id": "K", "key_file": "k.p8", "topic": "t", "max_connections": 3},
                           "fcm": {"service_account_file": "sa.json"}}}
            """))
        let providers = c.redacted()["providers"]
        #expect(providers?["apns"]?["max_connections"] == .int(3))
        #expect(providers?["fcm"]?["max_connections"] == .int(Int64(Config.defaultMaxConnections)))
        #expect(providers?["sandbox"]?["max_connections"] == nil)
    }

    /// `config --check` shows how many jobs a dispatcher runs at once, the default included.
    @Test func maxJobsIsPrinted() throws {
        #expect(try ConfigLoader.parse(try JSONParser.parse("{}")).redacted()["max_jobs"] == .int(4))
        #expect(try ConfigLoader.parse(try JSONParser.parse(#"{"max_jobs": 9}"#)).redacted()["max_jobs"] == .int(9))
    }
}
