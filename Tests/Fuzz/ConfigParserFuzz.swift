// libFuzzer target: the config parser never crashes; every problem it reports is one non-empty
// line naming its key (or the byte where the file stops being JSON); a config it accepts is sane
// (concurrency and retries in range, every platform routed to a provider that is configured and
// can deliver to it, no empty path or name). Each input is parsed with every `env:` value
// required and again with unset ones allowed (as `submit` does): the lenient parse accepts
// everything the strict one does, with the same values.
@testable import PushspoolCore
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let environment = ["WNS_SECRET": "s3cret", "WNS_CLIENT_SECRET": "s3cret", "NH": "Endpoint=sb://ns/;SharedAccessKeyName=k;SharedAccessKey=v",
                       "NH_CONNECTION_STRING": "Endpoint=sb://ns/;SharedAccessKeyName=k;SharedAccessKey=v",
                       "PUSHSPOOL_REGISTRY": "postgresql://pushspool@db/pushspool", "EMPTY": ""]
    let strict = Result { () throws(ConfigError) in
        try ConfigParser.parse(bytes, source: "pushspool.json", environment: environment)
    }
    let lenient = Result { () throws(ConfigError) in
        try ConfigParser.parse(bytes, source: "pushspool.json", environment: environment, requireSecrets: false)
    }
    for result in [strict, lenient] {
        switch result {
        case .success(let config): checkSane(config)
        case .failure(let error): checkProblems(error)
        }
    }
    if case .success(let config) = strict {
        guard case .success(let again) = lenient else { preconditionFailure("accepted strictly, refused leniently") }
        precondition(summary(config) == summary(again), "the lenient parse read other values")
    }
    return 0
}

func checkProblems(_ error: ConfigError) {
    precondition(!error.problems.isEmpty, "refused without a problem")
    for problem in error.problems {
        precondition(!problem.contains(where: \.isNewline) && !problem.unicodeScalars.contains(where: isControl),
                     "a problem over several lines, or with control characters: \(problem.debugDescription)")
        if problem.hasPrefix("pushspool.json: invalid JSON at byte ") { continue }
        let parts = problem.split(separator: ": ", maxSplits: 1, omittingEmptySubsequences: false)
        precondition(parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty,
                     "a problem that names no key: \(problem.debugDescription)")
    }
}

func isControl(_ u: Unicode.Scalar) -> Bool {
    [.control, .lineSeparator, .paragraphSeparator].contains(u.properties.generalCategory)
}

func checkSane(_ c: Config) {
    precondition((1...100_000).contains(c.concurrency), "concurrency \(c.concurrency)")
    precondition((1...100).contains(c.retry.maxAttempts) && c.retry.baseDelay > 0 && c.retry.maxDelay > 0, "retry \(c.retry)")
    precondition((1...3600).contains(c.metrics.intervalSeconds), "metrics interval \(c.metrics.intervalSeconds)")
    for (name, limit) in c.maxPerSecond {
        precondition(c.providers[name] != nil && (0.01...1_000_000).contains(limit), "max_per_second \(name) \(limit)")
    }
    precondition(c.routes.count == Platform.allCases.count, "routes \(c.routes)")
    for platform in Platform.allCases {
        let provider = c.routes[platform] ?? ""
        let serves = switch provider {
        case "sandbox": true
        case "apns": platform == .apns && c.apns != nil
        case "fcm": platform == .fcm && c.fcm != nil
        case "wns": platform == .wns && c.wns != nil
        case "webpush": platform == .web && c.webpush != nil
        case "azure": platform != .web && c.azure != nil
        // A named provider (`type`): one its type can deliver through.
        default: c.providerKind(provider)?.delivers(platform) ?? false
        }
        precondition(serves, "\(platform.rawValue) routed to \"\(provider)\", which cannot deliver it")
    }
    var named: [String?] = [c.spool, c.registry, c.sandbox.outbox, c.tls.caFile, c.metrics.textfile]
    if let a = c.apns {
        precondition(["production", "sandbox"].contains(a.environment), "apns environment \(a.environment)")
        named += [a.teamID, a.keyID, a.keyFile, a.topic, a.endpoint]
    }
    if let f = c.fcm { named += [f.serviceAccountFile, f.endpoint] }
    if let w = c.wns {
        named += [w.clientID, w.clientSecret.value, w.tokenEndpoint, w.scope]
        checkHosts(w.allowedHosts)
    }
    if let w = c.webpush {
        named += [w.vapidPrivateKeyFile, w.subject]
        checkHosts(w.allowedHosts)
    }
    if let z = c.azure {
        precondition(["fcmV1", "gcm"].contains(z.fcmFormat), "azure fcm_format \(z.fcmFormat)")
        named += [z.connectionString.value, z.hub, z.apiVersion]
    }
    if let h = c.http {
        precondition(ListenAddress(h.listen) != nil, "http.listen \(h.listen)")
        precondition((h.tlsCertFile == nil) == (h.tlsKeyFile == nil), "http.tls: one file without the other")
        precondition(h.clientTagPrefixes.allSatisfy { TagExpression.isValidTag($0) && !ConfigParser.Reader.coversUserTags($0) },
                     "http.client_tag_prefixes \(h.clientTagPrefixes)")
        precondition((1...1_000_000).contains(h.rateLimitPerMinute) && (1...3600).contains(h.timeoutSeconds)
                     && (1...100_000).contains(h.maxConnections), "http limits")
        named += [h.tlsCertFile, h.tlsKeyFile, h.usersFile, h.tokensFile]
    }
    precondition(!named.contains(""), "an empty path or name was accepted")
}

func checkHosts(_ hosts: [String]) {
    precondition(!hosts.isEmpty && hosts.allSatisfy { !$0.isEmpty && $0 == $0.lowercased() }, "allowed_hosts \(hosts)")
}

/// The values two parses of one document must agree on.
func summary(_ c: Config) -> [String] {
    var lines = ["spool \(c.spool)", "registry \(c.registryPath)", "concurrency \(c.concurrency)", "retry \(c.retry)",
                 "outbox \(c.outboxPath)", "tls \(c.tls.caFile ?? "-")", "metrics \(c.metrics.textfile ?? "-") \(c.metrics.intervalSeconds)"]
    lines += Platform.allCases.map { "route \($0.rawValue) \(c.routes[$0] ?? "-")" }
    lines += c.maxPerSecond.map { "rate \($0.key) \($0.value)" }.sorted()
    if let a = c.apns { lines.append("apns \(a.teamID) \(a.keyID) \(a.keyFile) \(a.topic) \(a.baseURL)") }
    if let f = c.fcm { lines.append("fcm \(f.serviceAccountFile) \(f.endpoint ?? "-")") }
    if let w = c.wns { lines.append("wns \(w.clientID) \(w.clientSecret.value) \(w.tokenEndpoint ?? "-") \(w.scope ?? "-") \(w.allowedHosts)") }
    if let w = c.webpush { lines.append("webpush \(w.vapidPrivateKeyFile) \(w.subject) \(w.allowedHosts)") }
    if let h = c.http {
        lines.append("http \(h.listen) \(h.tlsCertFile ?? "-") \(h.tlsKeyFile ?? "-") \(h.usersFile ?? "-") \(h.tokensFile ?? "-") \(h.usersMaySend) \(h.clientTagPrefixes) \(h.rateLimitPerMinute) \(h.timeoutSeconds) \(h.maxConnections)")
    }
    if let z = c.azure { lines.append("azure \(z.connectionString.value) \(z.hub) \(z.fcmFormat) \(z.apiVersion ?? "-")") }
    return lines
}
