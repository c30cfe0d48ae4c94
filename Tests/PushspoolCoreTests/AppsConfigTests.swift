import Testing
@testable import PushspoolCore

/// `apps`, `default_app` and named providers (README "Several apps").
@Suite struct AppsConfigTests {
    static let twoKeys = #"""
        {"providers": {
            "apns-acme": {"type": "apns", "team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "a.p8", "environment": "sandbox"},
            "apns-other": {"type": "apns", "team_id": "FGHIJ12345", "key_id": "KEY7654321", "key_file": "b.p8", "topic": "com.other.app"},
            "fcm-chat": {"type": "fcm", "service_account_file": "chat.json", "max_per_second": 50},
            "fcm": {"service_account_file": "shop.json"}},
         "apps": {
            "chat": {"routes": {"apns": "apns-acme", "fcm": "fcm-chat"}, "apns_topic": "com.acme.chat", "max_per_second": 20},
            "shop": {"routes": {"apns": "apns-acme", "fcm": "fcm"}, "apns_topic": "com.acme.shop"},
            "legacy": {"routes": {"apns": "apns-other"}}},
         "default_app": "chat"}
        """#

    func parse(_ text: String) throws -> Config {
        try ConfigParser.parse(Array(text.utf8), source: "pushspool.json", environment: [:])
    }

    func problems(_ text: String) -> [String] {
        do {
            _ = try parse(text)
            return []
        } catch {
            return (error as? ConfigError)?.problems ?? ["\(error)"]
        }
    }

    @Test func aConfigWithoutAppsIsOneAppNamedDefault() throws {
        let c = try parse(#"{"providers": {"apns": {"team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "k.p8", "topic": "com.example.app"}}}"#)
        #expect(c.defaultApp == "default")
        #expect(Array(c.apps.keys) == ["default"])
        #expect(c.apps["default"]?.routes == c.routes)
        #expect(c.apnsTopic(of: "default") == "com.example.app")
        #expect(c.apnsEnvironment(of: "default") == .production)
        #expect(c.appsSection == nil)
    }

    @Test func namedProvidersAndAppsAreRead() throws {
        let c = try parse(Self.twoKeys)
        #expect(c.defaultApp == "chat")
        #expect(Set(c.apps.keys) == ["chat", "shop", "legacy"])
        #expect(c.providerKind("apns-acme") == .apns)
        #expect(c.providerKind("fcm-chat") == .fcm)
        #expect(c.apps["chat"]?.routes[.fcm] == "fcm-chat")
        #expect(c.apps["legacy"]?.routes[.fcm] == "fcm")   // the top-level routes' default
        #expect(c.apps["chat"]?.maxPerSecond == 20)
        #expect(c.maxPerSecond["fcm-chat"] == 50)
        #expect(c.apnsTopic(of: "shop") == "com.acme.shop")
        #expect(c.apnsTopic(of: "legacy") == "com.other.app")
        #expect(c.apnsEnvironment(of: "chat") == .development)
        #expect(c.apnsEnvironment(of: "legacy") == .production)
        #expect(c.apps(routingTo: "apns-acme") == ["chat", "shop"])
        // The top-level routes are the default app's.
        #expect(c.routes[.apns] == "apns-acme")
    }

    @Test func theEnvironmentTakesSandboxAsTheNameOfDevelopment() {
        #expect(APNsEnvironment(name: "sandbox") == .development)
        #expect(APNsEnvironment(name: "development") == .development)
        #expect(APNsEnvironment(name: "production") == .production)
        #expect(APNsEnvironment(name: "prod") == nil)
    }

    @Test func eachEnvironmentHasItsHostEndpointKeepingItsMeaning() throws {
        var a = APNsConfig(teamID: "T", keyID: "K", keyFile: "k", topic: "t", environment: "production", endpoint: "https://p.test")
        #expect(a.baseURL(for: .production) == "https://p.test")
        #expect(a.baseURL(for: .development) == "https://api.sandbox.push.apple.com")
        a.environment = "sandbox"
        #expect(a.baseURL(for: .production) == "https://api.push.apple.com")
        #expect(a.baseURL(for: .development) == "https://p.test")
        a.sandboxEndpoint = "https://s.test"
        a.productionEndpoint = "https://pp.test"
        #expect(a.baseURL(for: .development) == "https://s.test")
        #expect(a.baseURL(for: .production) == "https://pp.test")
    }

    @Test func everyProblemNamesItsFieldAndApp() {
        let text = #"""
            {"providers": {
                "apns-acme": {"type": "apns", "team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "a.p8"},
                "fcm-x": {"type": "fcmm", "service_account_file": "x.json"},
                "bad name": {"type": "fcm", "service_account_file": "x.json"}},
             "apps": {
                "chat": {"routes": {"apns": "apns-acme"}, "apns_topic": "com.acme.chat"},
                "shop": {"routes": {"apns": "apns-acme"}, "apns_topic": "com.acme.chat"},
                "news": {"routes": {"apns": "apns-acme", "fcm": "nope"}},
                "bad/id": {}},
             "default_app": "blog"}
            """#
        let found = problems(text)
        #expect(found.contains(#"providers.fcm-x.type: must be one of apns, fcm, wns, webpush, azure, sandbox, hms, adm, got "fcmm""#), "\(found)")
        #expect(found.contains { $0.hasPrefix(#"providers."bad name": provider name must match"#) }, "\(found)")
        #expect(found.contains(#"apps.shop.apns_topic: "com.acme.chat" is also app chat's topic on provider apns-acme (one topic, one app)"#), "\(found)")
        #expect(found.contains("apps.news.apns_topic: is required: app news routes apns to provider apns-acme, which has no topic"), "\(found)")
        #expect(found.contains { $0.hasPrefix(#"apps.news.routes.fcm: unknown provider "nope""#) }, "\(found)")
        #expect(found.contains { $0.hasPrefix(#"apps."bad/id": app id must match"#) }, "\(found)")
        #expect(found.contains(#"default_app: unknown app "blog" (expected chat, news, shop)"#), "\(found)")
        #expect(found.allSatisfy { !$0.contains("\n") })
    }

    @Test func severalAppsNeedADefaultApp() {
        let text = #"{"apps": {"a": {}, "b": {}}}"#
        #expect(problems(text) == ["default_app: is required with several apps (one of a, b)"])
        #expect(problems(#"{"default_app": "x"}"#) == [#"default_app: unknown app "x" (without "apps" the one app is "default")"#])
    }

    @Test func aProviderWithoutTopicIsFineWhenEveryAppHasOne() throws {
        let c = try parse(#"{"providers": {"apns": {"team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "k.p8"}}, "apps": {"a": {"apns_topic": "com.a"}}}"#)
        #expect(c.defaultApp == "a")
        #expect(c.apnsTopic(of: "a") == "com.a")
        #expect(problems(#"{"providers": {"apns": {"team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "k.p8"}}}"#)
                == ["providers.apns.topic: is required"])
    }
}
