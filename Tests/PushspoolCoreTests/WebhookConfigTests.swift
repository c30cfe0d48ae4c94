import Testing
@testable import PushspoolCore

@Suite struct WebhookConfigTests {
    static let env = ["HOOK_SECRET": "whsec-0123456789abcdef"]

    func problems(_ hooks: String, apps: String = "") -> [String] {
        let text = #"{"spool": "s", "webhooks": \#(hooks)\#(apps)}"#
        do {
            _ = try ConfigParser.parse(Array(text.utf8), source: "c.json", environment: Self.env)
            return []
        } catch { return error.problems }
    }

    @Test func validWebhooksParse() throws {
        let text = #"{"webhooks": [{"url": "https://hooks.example.com/in", "secret": "env:HOOK_SECRET", "events": ["job.finished"]}, {"url": "http://127.0.0.1:9000/x", "secret": "env:HOOK_SECRET", "events": ["device.unregistered", "job.finished"], "apps": ["default"]}]}"#
        let c = try ConfigParser.parse(Array(text.utf8), source: "c.json", environment: Self.env)
        #expect(c.webhooks.count == 2)
        #expect(c.webhooks[0].secret.value == "whsec-0123456789abcdef")
        #expect("\(c.webhooks[0].secret)" == "***")
        #expect(c.webhooks[1].wants(.jobFinished, about: ["default"]) && !c.webhooks[1].wants(.jobFinished, about: ["other"]))
        #expect(!c.webhooks[0].wants(.deviceUnregistered, about: ["default"]))
        #expect(Redaction.secrets(in: c).contains("whsec-0123456789abcdef"))
    }

    @Test func eachProblemIsOneLineNamingTheField() {
        #expect(problems(#"[{"url": "http://hooks.example.com/in", "secret": "env:HOOK_SECRET", "events": ["job.finished"]}]"#)
                == ["webhooks[0].url: must be https (plain http only to a loopback address such as 127.0.0.1), got an http URL to hooks.example.com"])
        #expect(problems(#"[{"url": "https://h.example/in", "secret": "env:HOOK_SECRET", "events": ["job.finished", "job.started"]}]"#)
                == [#"webhooks[0].events[1]: unknown event "job.started" (expected job.finished, device.unregistered)"#])
        #expect(problems(#"[{"url": "https://h.example/in", "events": ["job.finished"]}]"#)
                == [#"webhooks[0].secret: is required (the key receivers check Pushspool-Signature with; write "env:NAME")"#])
        #expect(problems(#"[{"url": "https://h.example/in", "secret": "env:NOPE", "events": ["job.finished"]}]"#)
                == ["webhooks[0].secret: environment variable NOPE is not set"])
        #expect(problems(#"[{"url": "https://h.example/in", "secret": "short", "events": ["job.finished"]}]"#)
                == ["webhooks[0].secret: must be at least 16 characters"])
        #expect(problems(#"[{"url": "https://h.example/in", "secret": "env:HOOK_SECRET", "events": ["job.finished"], "apps": ["nope"]}]"#)
                == [#"webhooks[0].apps[0]: unknown app "nope" (expected default)"#])
        #expect(problems(#"[{"url": "https://user:pw@h.example/in", "secret": "env:HOOK_SECRET", "events": ["job.finished"]}]"#)
                == ["webhooks[0].url: must be an https URL with a plain host name or address (no user info, spaces or escapes)"])
        #expect(problems(#"[{"url": "https://h.example/in", "secret": "env:HOOK_SECRET", "events": ["job.finished"], "retries": 3}]"#)
                == ["webhooks[0].retries: unknown key"])
        #expect(problems(#"{"url": "https://h.example/in"}"#) == ["webhooks: must be an array of webhooks, got object"])
        // No problem quotes the secret.
        #expect(!problems(#"[{"url": "ftp://x", "secret": "env:HOOK_SECRET", "events": []}]"#).joined().contains("whsec-0123456789abcdef"))
    }

    @Test func loopbackHostsAreThoseWrittenAsSuch() {
        #expect(WebhookConfig.isLoopback("127.0.0.1") && WebhookConfig.isLoopback("127.1.2.3") && WebhookConfig.isLoopback("::1")
                && WebhookConfig.isLoopback("localhost"))
        #expect(!WebhookConfig.isLoopback("127.0.0.1.example.com") && !WebhookConfig.isLoopback("10.0.0.1"))
        #expect(WebhookConfig.parts("http://[::1]:8080/x")?.host == "::1")
        #expect(WebhookConfig.parts("https://h.example:70000/") == nil)
    }
}
