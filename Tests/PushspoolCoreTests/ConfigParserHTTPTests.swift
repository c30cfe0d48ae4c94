import Testing
@testable import PushspoolCore

/// The `http` section: every key, its default, and each problem naming its key.
@Suite struct ConfigParserHTTPTests {
    func parse(_ text: String) throws(ConfigError) -> Config {
        try ConfigParser.parse(Array(text.utf8), source: "pushspool.json", environment: ["TOKENS": "/etc/pushspool/tokens.txt"])
    }

    func problems(_ http: String) -> [String] {
        do {
            _ = try parse(#"{"http": \#(http)}"#)
            return []
        } catch {
            return error.problems
        }
    }

    @Test func noSectionIsNilAndAnEmptyOneHasTheDefaults() throws {
        #expect(try parse("{}").http == nil)
        let h = try #require(try parse(#"{"http": {}}"#).http)
        #expect(h.listen == "127.0.0.1:8080")
        #expect(h.tlsCertFile == nil && h.tlsKeyFile == nil && h.usersFile == nil && h.tokensFile == nil)
        #expect(h.usersMaySend == true)
        #expect(h.clientTagPrefixes == [])
        #expect(h.rateLimitPerMinute == 600 && h.timeoutSeconds == 30 && h.maxConnections == 4096)
    }

    @Test func everyKeyIsRead() throws {
        let h = try #require(try parse("""
            {"http": {"listen": "[::1]:8443", "tls": {"cert_file": "cert.pem", "key_file": "key.pem"},
                      "users_file": "users.htpasswd", "tokens_file": "env:TOKENS", "users_may_send": false,
                      "client_tag_prefixes": ["follows_", "location_"], "rate_limit_per_minute": 1000000,
                      "timeout_seconds": 3600, "max_connections": 100000, "request_timeout_seconds": 3600}}
            """).http)
        #expect(h.listen == "[::1]:8443")
        #expect(h.tlsCertFile == "cert.pem" && h.tlsKeyFile == "key.pem")
        #expect(h.usersFile == "users.htpasswd" && h.tokensFile == "/etc/pushspool/tokens.txt")
        #expect(h.usersMaySend == false)
        #expect(h.clientTagPrefixes == ["follows_", "location_"])
        #expect(h.rateLimitPerMinute == 1_000_000 && h.timeoutSeconds == 3600 && h.maxConnections == 100_000)
        #expect(h.requestTimeoutSeconds == 3600)
    }

    @Test("the README example's section parses (TLS files null: plain HTTP)")
    func readmeExample() throws {
        let h = try #require(try parse("""
            {"http": {"listen": "127.0.0.1:8080", "tls": {"cert_file": null, "key_file": null},
                      "users_file": "users.htpasswd", "tokens_file": "tokens.txt", "users_may_send": true,
                      "client_tag_prefixes": ["follows_", "location_"], "rate_limit_per_minute": 600, "timeout_seconds": 30}}
            """).http)
        #expect(h.tlsCertFile == nil && h.tlsKeyFile == nil)
    }

    @Test("listen forms", arguments: [
        ("127.0.0.1:8080", ListenAddress(host: "127.0.0.1", port: 8080)),
        (":443", ListenAddress(host: nil, port: 443)),
        ("[::]:1", ListenAddress(host: "::", port: 1)),
        ("127.0.0.1:0", ListenAddress(host: "127.0.0.1", port: 0)),
        ("[2001:db8::1]:65535", ListenAddress(host: "2001:db8::1", port: 65535)),
        ("localhost:8080", ListenAddress(host: "localhost", port: 8080)),
    ])
    func listenForms(_ text: String, _ expected: ListenAddress) {
        #expect(ListenAddress(text) == expected)
        #expect(ListenAddress(text)?.description == text)
        #expect(problems(#"{"listen": "\#(text)"}"#) == [])
    }

    @Test("listen refusals", arguments: ["8080", "host:", ":65536", "::1:8080", "[::1]8080", "[::1]", "[host]:80",
                                         "a b:80", ":+80", ":00080x", "[::1]:80:80", "-x:80"])
    func listenRefused(_ text: String) {
        #expect(problems(#"{"listen": "\#(text)"}"#)
                == [#"http.listen: must be host:port, [v6-address]:port or :port with a port in 0…65535, got "\#(text)""#])
    }

    @Test func everyProblemAtOnceEachNamingItsKey() {
        let p = problems("""
            {"listn": ":80", "tls": {"cert_file": "c.pem", "key_fil": "k.pem"}, "users_file": "", "tokens_file": 7,
             "users_may_send": "yes", "client_tag_prefixes": "follows_", "rate_limit_per_minute": 0,
             "timeout_seconds": 3601, "max_connections": 100001, "request_timeout_seconds": 0}
            """)
        #expect(p == [
            #"http.listn: unknown key (did you mean "listen"?)"#,
            #"http.tls.key_fil: unknown key (did you mean "key_file"?)"#,
            "http.tls: needs both cert_file and key_file (or neither, for plain HTTP)",
            "http.users_file: must not be empty",
            "http.tokens_file: must be a string, got number",
            "http.users_may_send: must be true or false, got string",
            "http.client_tag_prefixes: must be an array of tag prefixes, got string",
            "http.rate_limit_per_minute: must be an integer in 1…1000000",
            "http.timeout_seconds: must be an integer in 1…3600",
            "http.max_connections: must be an integer in 1…100000",
            "http.request_timeout_seconds: must be an integer in 1…3600",
        ])
        #expect(problems(#"{"tsl": {}}"#) == [#"http.tsl: unknown key (did you mean "tls"?)"#])
        #expect(problems(#"{"tls": {"key_file": "k.pem"}}"#) == ["http.tls: needs both cert_file and key_file (or neither, for plain HTTP)"])
    }

    @Test("a prefix that covers username: tags is refused: it would let a user claim another's name",
          arguments: ["username:", "user", "u", "Username:", "username:b", "USERNAME:alice"])
    func userTagPrefixes(_ prefix: String) {
        #expect(problems(#"{"client_tag_prefixes": ["ok_", "\#(prefix)"]}"#)
                == [#"http.client_tag_prefixes[1]: "\#(prefix)" would let users set username: tags, which name other users"#])
    }

    @Test func prefixesMustBeTagCharacters() {
        #expect(problems(#"{"client_tag_prefixes": ["a b", "", 3, "x/y", "ok:"]}"#) == [
            #"http.client_tag_prefixes[0]: "a b" is not the start of a tag (1–120 characters of A-Z a-z 0-9 _ @ # . : -)"#,
            #"http.client_tag_prefixes[1]: "" is not the start of a tag (1–120 characters of A-Z a-z 0-9 _ @ # . : -)"#,
            "http.client_tag_prefixes[2]: must be a string, got number",
            #"http.client_tag_prefixes[3]: "x/y" is not the start of a tag (1–120 characters of A-Z a-z 0-9 _ @ # . : -)"#,
        ])
    }
}
