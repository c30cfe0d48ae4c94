import Testing
@testable import PushspoolCore

/// What the config fuzz target found, one test each; the parser's behaviour at large is tested
/// through `ConfigLoader` in PushspoolKitTests.
@Suite struct ConfigParserTests {
    func problems(_ text: String, env: [String: String] = [:]) -> [String] {
        do {
            _ = try ConfigParser.parse(Array(text.utf8), source: "pushspool.json", environment: env)
            return []
        } catch {
            return error.problems
        }
    }

    @Test("a document that is not an object is one problem, not also one with an empty key",
          arguments: [#""team""#, "[]", "1", "null"])
    func notAnObject(_ text: String) {
        #expect(problems(text) == ["config: must be a JSON object"])
    }

    @Test func keysSomeoneTypedStayOnOneLineAtTheStartOfTheirProblem() {
        #expect(problems(#"{"providers": {"\u007fe,push": {}}}"#) == [#"providers."\u007Fe,push": unknown key (did you mean "webpush"?)"#])
        #expect(problems(#"{"": 1, "a.b c": 2, "tls": {"ca\nfile": "x"}}"#)
                == [#""": unknown key"#, #""a.b c": unknown key"#, #"tls."ca\nfile": unknown key (did you mean "ca_file"?)"#])
        #expect(problems(#"{"providers": {"x\u2028": {"max_per_second": 0}}}"#) == [#"providers."x\u2028": unknown key"#])
    }

    /// `owner_lease_seconds` (the lease of a spool shared over NFS, which earlier releases had):
    /// a config that still has it is refused with a line saying what replaced it, whatever its value.
    @Test func ownerLeaseSecondsIsRemoved() {
        let line = "owner_lease_seconds: removed — several hosts share work through the PostgreSQL queue (README: Several hosts); remove the key"
        for value in ["60", "2", "0", "null", #""x""#] {
            #expect(problems(#"{"spool": "s", "owner_lease_seconds": \#(value)}"#) == [line], "\(value)")
        }
        #expect(problems(#"{"spool": "s"}"#).isEmpty)
    }

    /// `queue`: its defaults, its keys, and a wrong value named by its field.
    @Test func queueSettings() throws {
        let parse = { (text: String) throws(ConfigError) -> Config in
            try ConfigParser.parse(Array(text.utf8), source: "pushspool.json", environment: [:])
        }
        let defaults = try parse(#"{"spool": "s"}"#).queue
        #expect(defaults.enabled && defaults.chunkSize == 10_000 && defaults.leaseSeconds == 30 && defaults.maxChunks == 4 && !defaults.durableOutcomes)
        #expect(defaults.keepDays == 30)
        let q = try parse(#"{"spool": "s", "queue": {"durable_outcomes": true, "max_chunks": 2, "chunk_size": 500, "keep_days": 0}}"#).queue
        #expect(q.durableOutcomes && q.maxChunks == 2 && q.chunkSize == 500 && q.keepDays == 0)
        #expect(problems(#"{"spool": "s", "queue": {"durable_outcomes": "yes"}}"#).first?.hasPrefix("queue.durable_outcomes") == true)
        #expect(problems(#"{"spool": "s", "queue": {"keep_days": 1.5}}"#) == ["queue.keep_days: must be an integer in 0…36500"])
    }

    /// `max_jobs`: jobs one dispatcher runs at once, 1…1024, 4 when unset.
    @Test func maxJobs() throws {
        let parse = { (text: String) throws(ConfigError) -> Config in
            try ConfigParser.parse(Array(text.utf8), source: "pushspool.json", environment: [:])
        }
        #expect(try parse("{}").maxJobs == 4)
        #expect(try parse(#"{"max_jobs": 1}"#).maxJobs == 1)
        #expect(try parse(#"{"max_jobs": 64}"#).maxJobs == 64)
        for bad in ["0", "1025", "2.5", #""4""#, "-1"] {
            #expect(problems(#"{"max_jobs": \#(bad)}"#) == ["max_jobs: must be an integer in 1…1024"])
        }
        #expect(problems(#"{"max_job": 2}"#) == [#"max_job: unknown key (did you mean "max_jobs"?)"#])
    }

    /// `registry_connections`: one process's PostgreSQL connections, 2…1000 (the queue's LISTEN
    /// keeps one), 16 when unset.
    @Test func registryConnections() throws {
        let parse = { (text: String) throws(ConfigError) -> Config in
            try ConfigParser.parse(Array(text.utf8), source: "pushspool.json", environment: [:])
        }
        #expect(try parse("{}").registryConnections == 16)
        #expect(try parse(#"{"registry_connections": 2}"#).registryConnections == 2)
        for bad in ["1", "1001", "2.5", #""4""#] {
            #expect(problems(#"{"registry_connections": \#(bad)}"#) == ["registry_connections: must be an integer in 2…1000"])
        }
    }

    /// `providers.<name>.max_connections`: connections per origin for the HTTP providers, 1…64,
    /// 8 when unset; the sandbox opens none and does not take it.
    @Test func maxConnectionsPerProvider() throws {
        let text = #"""
            {"providers": {"apns": {"team_id": "T", "key_id": "K", "key_file": "k.p8", "topic": "t", "max_connections": 2},
                           "webpush": {"vapid_private_key_file": "v.pem", "subject": "mailto:a@b.c", "max_connections": 16}}}
            """#
        let c = try ConfigParser.parse(Array(text.utf8), source: "pushspool.json", environment: [:])
        #expect(c.maxConnections(for: "apns") == 2)
        #expect(c.maxConnections(for: "webpush") == 16)
        #expect(c.maxConnections(for: "fcm") == 8)
        #expect(problems(#"{"providers": {"fcm": {"service_account_file": "s", "max_connections": 0}}}"#)
                == ["providers.fcm.max_connections: must be an integer in 1…64"])
        #expect(problems(#"{"providers": {"wns": {"client_id": "c", "client_secret": "s", "max_connections": 1.5}}}"#)
                == ["providers.wns.max_connections: must be an integer in 1…64"])
        #expect(problems(#"{"providers": {"sandbox": {"max_connections": 2}}}"#).count == 1)
    }

    @Test func valuesSomeoneTypedAreQuotedWithTheirControlCharactersEscaped() {
        let text = #"""
            {"routes": {"wns": "w\u001b[2Jns"},
             "providers": {"apns": {"team_id": "T", "key_id": "K", "key_file": "k.p8", "topic": "t", "environment": "prod\nuction"},
                           "wns": {"client_id": "c", "client_secret": "env:WNS\rSECRET"},
                           "azure": {"connection_string": "x", "hub": "h", "fcm_format": "fcm\u0085V1"}}}
            """#
        #expect(problems(text) == [
            #"providers.apns.environment: must be "production" or "sandbox", got "prod\nuction""#,
            #"providers.wns.client_secret: environment variable "WNS\rSECRET" is not set"#,
            #"providers.azure.fcm_format: must be "fcmV1" or "gcm", got "fcm\u0085V1""#,
            #"routes.wns: unknown provider "w\u001B[2Jns" (expected apns, fcm, wns, webpush, azure, sandbox, hms, adm)"#,
        ])
    }

    @Test("an empty path or name is a problem (an empty spool made the config's folder a spool)",
          arguments: ["spool", "registry", "tls.ca_file", "metrics.textfile", "providers.sandbox.outbox", "providers.fcm.endpoint"])
    func emptyValues(_ key: String) {
        let path = key.split(separator: ".").map(String.init)
        var text = #"{"providers": {"fcm": {"service_account_file": "sa.json"}}}"#
        if path.count == 1 { text = #"{"\#(key)": ""}"# }
        else if path[0] == "providers" { text = #"{"providers": {"fcm": {"service_account_file": "sa.json"}, "\#(path[1])": {"\#(path[2])": ""}}}"# }
        else { text = #"{"\#(path[0])": {"\#(path[1])": ""}}"# }
        if key == "providers.fcm.endpoint" { text = #"{"providers": {"fcm": {"service_account_file": "sa.json", "endpoint": ""}}}"# }
        #expect(problems(text) == ["\(key): must not be empty"])
    }

    @Test func aRequiredEmptyValueIsStillOneProblem() {
        #expect(problems(#"{"providers": {"fcm": {"service_account_file": ""}}}"#) == ["providers.fcm.service_account_file: must not be empty"])
    }

    @Test func aControlByteOutsideAStringIsNamedNotPrinted() {
        #expect(problems("\u{0C}") == ["pushspool.json: invalid JSON at byte 0: unexpected byte 0x0C"])
    }
}

@Suite struct HMSADMConfigTests {
    func parse(_ text: String) -> Result<Config, ConfigError> {
        do { return .success(try ConfigParser.parse(Array(text.utf8), source: "pushspool.json", environment: ["HMS_SECRET": "s3"])) } catch { return .failure(error) }
    }

    @Test func bothProvidersParseWithDefaultsAndRouteTheirPlatforms() throws {
        let c = try parse(#"{"providers":{"hms":{"app_id":"104","client_id":"104","client_secret":"env:HMS_SECRET"},"adm":{"client_id":"amzn1.application-oa2-client.1","client_secret":"x"}}}"#).get()
        #expect(c.hms?.appID == "104" && c.hms?.clientSecret.value == "s3" && c.hms?.endpoint == nil)
        #expect(c.adm?.clientID == "amzn1.application-oa2-client.1")
        #expect(c.routes[.hms] == "hms" && c.routes[.adm] == "adm")
    }

    @Test func hmsWithoutAppIDIsOneLineNamingTheField() {
        guard case .failure(let e) = parse(#"{"providers":{"hms":{"client_id":"1","client_secret":"x"}}}"#) else { Issue.record("parsed"); return }
        #expect(e.problems == ["providers.hms.app_id: is required"])
    }

    /// An app's `hms` route to a named HMS provider that has no `app_id`: one line naming it.
    @Test func anAppsHMSRouteToAProviderWithoutAppIDIsOneLine() {
        let text = #"{"providers":{"hms-shop":{"type":"hms","client_id":"1","client_secret":"x"}},"apps":{"shop":{"routes":{"hms":"hms-shop"}}},"default_app":"shop"}"#
        guard case .failure(let e) = parse(text) else { Issue.record("parsed"); return }
        #expect(e.problems == ["providers.hms-shop.app_id: is required"], "\(e.problems)")
    }

    @Test func onlyTheirOwnProvidersDeliverThem() {
        guard case .failure(let e) = parse(#"{"providers":{"fcm":{"service_account_file":"sa.json"}},"routes":{"hms":"fcm"}}"#) else { Issue.record("parsed"); return }
        #expect(e.problems == [#"routes.hms: provider "fcm" cannot deliver to hms"#])
    }
}
