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
        #expect(h.maxConnectionsPerAddress == 64 && h.trustedProxies == [] && h.handlesMoveBetweenUsers == true)
    }

    @Test func everyKeyIsRead() throws {
        let h = try #require(try parse("""
            {"http": {"listen": "[::1]:8443", "tls": {"cert_file": "cert.pem", "key_file": "key.pem"},
                      "users_file": "users.htpasswd", "tokens_file": "env:TOKENS", "users_may_send": false,
                      "client_tag_prefixes": ["follows_", "location_"], "rate_limit_per_minute": 1000000,
                      "timeout_seconds": 3600, "max_connections": 100000, "max_connections_per_address": 0,
                      "trusted_proxies": ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::1"],
                      "handles_move_between_users": false}}
            """).http)
        #expect(h.listen == "[::1]:8443")
        #expect(h.tlsCertFile == "cert.pem" && h.tlsKeyFile == "key.pem")
        #expect(h.usersFile == "users.htpasswd" && h.tokensFile == "/etc/pushspool/tokens.txt")
        #expect(h.usersMaySend == false)
        #expect(h.clientTagPrefixes == ["follows_", "location_"])
        #expect(h.rateLimitPerMinute == 1_000_000 && h.timeoutSeconds == 3600 && h.maxConnections == 100_000)
        #expect(h.maxConnectionsPerAddress == 0 && h.handlesMoveBetweenUsers == false)
        #expect(h.trustedProxies.map(\.description) == ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::1"])
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
             "timeout_seconds": 3601, "max_connections": 100001, "max_connections_per_address": -1,
             "trusted_proxies": ["10.0.0.0/33", "proxy.example", 7, "::1/129", "10.0.0.1/"], "handles_move_between_users": 1}
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
            "http.max_connections_per_address: must be an integer in 0…100000",
            #"http.trusted_proxies[0]: "10.0.0.0/33" is not an IP address or CIDR block (such as 10.0.0.0/8 or 2001:db8::/32)"#,
            #"http.trusted_proxies[1]: "proxy.example" is not an IP address or CIDR block (such as 10.0.0.0/8 or 2001:db8::/32)"#,
            "http.trusted_proxies[2]: must be a string, got number",
            #"http.trusted_proxies[3]: "::1/129" is not an IP address or CIDR block (such as 10.0.0.0/8 or 2001:db8::/32)"#,
            #"http.trusted_proxies[4]: "10.0.0.1/" is not an IP address or CIDR block (such as 10.0.0.0/8 or 2001:db8::/32)"#,
            "http.handles_move_between_users: must be true or false, got number",
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

    @Test("address ranges: CIDR blocks and single addresses, IPv4 clients on a dual-stack socket")
    func addressRanges() throws {
        let v4 = try #require(AddressRange("10.1.0.0/16"))
        #expect(v4.contains("10.1.255.3") && !v4.contains("10.2.0.1") && v4.contains("::ffff:10.1.2.3"))
        #expect(!v4.contains("not an address") && !v4.contains(""))
        #expect(AddressRange("10.1.2.3/16")?.description == "10.1.0.0/16")
        let one = try #require(AddressRange("192.0.2.7"))
        #expect(one.contains("192.0.2.7") && !one.contains("192.0.2.8"))
        let v6 = try #require(AddressRange("2001:db8::/32"))
        #expect(v6.contains("2001:db8:ffff::1") && !v6.contains("2001:db9::1") && !v6.contains("10.1.2.3"))
        #expect(AddressRange("0.0.0.0/0")?.contains("203.0.113.9") == true)
        for bad in ["", "/8", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/+8", "::/129", "fe80::1%eth0", "10.0.0", "host"] {
            #expect(AddressRange(bad) == nil, "\(bad)")
        }
    }
}
