/// The `http` section: `pushspool serve`'s listen address, TLS files, credential files and limits.
/// Only the values are checked here; `config --check` reads the files.
extension ConfigParser.Reader {
    mutating func http(_ h: [String: JSONValue]) -> HTTPConfig {
        var c = HTTPConfig()
        if let listen = string(h["listen"], "http.listen") {
            if ListenAddress(listen) != nil { c.listen = listen } else {
                problem("http.listen", "must be host:port, [v6-address]:port or :port with a port in 0…65535, got \(JSONValue.quoted(listen))")
            }
        }
        if let t = object(h["tls"], "http.tls", allowed: ConfigKeys.httpTLS) {
            c.tlsCertFile = string(t["cert_file"], "http.tls.cert_file")
            c.tlsKeyFile = string(t["key_file"], "http.tls.key_file")
            // Only a failed value is nil for another reason; report the pairing only when both were fine.
            let certGiven = t["cert_file"].map { $0 != .null } ?? false
            let keyGiven = t["key_file"].map { $0 != .null } ?? false
            if certGiven != keyGiven {
                problem("http.tls", "needs both cert_file and key_file (or neither, for plain HTTP)")
            }
        }
        c.usersFile = string(h["users_file"], "http.users_file")
        c.tokensFile = string(h["tokens_file"], "http.tokens_file")
        c.operatorsFile = string(h["operators_file"], "http.operators_file")
        if let b = bool(h["users_may_send"], "http.users_may_send") { c.usersMaySend = b }
        if let prefixes = tagPrefixes(h["client_tag_prefixes"], "http.client_tag_prefixes") { c.clientTagPrefixes = prefixes }
        if let n = int(h["rate_limit_per_minute"], "http.rate_limit_per_minute", range: 1...1_000_000) { c.rateLimitPerMinute = n }
        if let n = int(h["timeout_seconds"], "http.timeout_seconds", range: 1...3600) { c.timeoutSeconds = n }
        if let n = int(h["max_connections"], "http.max_connections", range: 1...100_000) { c.maxConnections = n }
        if let n = int(h["max_connections_per_address"], "http.max_connections_per_address", range: 0...100_000) {
            c.maxConnectionsPerAddress = n
        }
        if let ranges = addressRanges(h["trusted_proxies"], "http.trusted_proxies") { c.trustedProxies = ranges }
        if let b = bool(h["handles_move_between_users"], "http.handles_move_between_users") { c.handlesMoveBetweenUsers = b }
        if let n = int(h["request_timeout_seconds"], "http.request_timeout_seconds", range: 1...3600) { c.requestTimeoutSeconds = n }
        return c
    }

    /// Addresses and CIDR blocks, every bad entry named by its index.
    mutating func addressRanges(_ v: JSONValue?, _ key: String) -> [AddressRange]? {
        guard let v, v != .null else { return nil }
        guard case .array(let items) = v else { problem(key, "must be an array of addresses or CIDR blocks, got \(v.typeName)"); return nil }
        var out: [AddressRange] = []
        var ok = true
        for (i, item) in items.enumerated() {
            guard case .string(let text) = item else { problem("\(key)[\(i)]", "must be a string, got \(item.typeName)"); ok = false; continue }
            guard let range = AddressRange(text) else {
                problem("\(key)[\(i)]", "\(JSONValue.quoted(text)) is not an IP address or CIDR block (such as 10.0.0.0/8 or 2001:db8::/32)")
                ok = false
                continue
            }
            out.append(range)
        }
        return ok ? out : nil
    }

    mutating func bool(_ v: JSONValue?, _ key: String) -> Bool? {
        guard let v, v != .null else { return nil }
        guard case .bool(let b) = v else { problem(key, "must be true or false, got \(v.typeName)"); return nil }
        return b
    }

    /// Prefixes of the tags app users may set. Each must be the start of a valid tag, and none
    /// may cover `username:` tags: a prefix `user` or `username:` would let a user tag its
    /// devices with another user's name and receive that user's notifications.
    mutating func tagPrefixes(_ v: JSONValue?, _ key: String) -> [String]? {
        guard let v, v != .null else { return nil }
        guard case .array(let items) = v else { problem(key, "must be an array of tag prefixes, got \(v.typeName)"); return nil }
        var out: [String] = []
        var ok = true
        for (i, item) in items.enumerated() {
            let itemKey = "\(key)[\(i)]"
            guard case .string(let prefix) = item else { problem(itemKey, "must be a string, got \(item.typeName)"); ok = false; continue }
            if !TagExpression.isValidTag(prefix) {
                problem(itemKey, "\(JSONValue.quoted(prefix)) is not the start of a tag (1–\(TagExpression.maxTagLength) characters of A-Z a-z 0-9 _ @ # . : -)")
                ok = false
            } else if Self.coversUserTags(prefix) {
                problem(itemKey, "\(JSONValue.quoted(prefix)) would let users set username: tags, which name other users")
                ok = false
            } else {
                out.append(prefix)
            }
        }
        return ok ? out : nil
    }

    /// Whether some `username:<name>` tag starts with `prefix`. Compared without case, so that a
    /// registry or hub that folds case cannot turn `Username:` into someone's tag.
    static func coversUserTags(_ prefix: String) -> Bool {
        let p = prefix.lowercased()
        return "username:".hasPrefix(p) || p.hasPrefix("username:")
    }
}
