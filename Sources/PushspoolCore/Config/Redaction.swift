import Foundation
import Synchronization

/// The one redaction: every place that shows a registry, an endpoint or a config value goes
/// through it (`init`, `status`, `config --check`, error messages, libpq's messages, logs).
///
/// - `connectionString(_:)`: a PostgreSQL URI or libpq keyword string with its password shown
///   as `***` (`postgresql://pushspool:***@db.example/push`, `?password=***`, `password=***`).
/// - `secrets(in:)`: the secret values a config holds (a WNS client secret, a hub connection
///   string and its key, the registry's password); `register(_:)` adds them to the process-wide
///   list that `scrub(_:)` replaces with `***` in any text (log lines, error messages).
/// - `Secret` prints as `***`.
public enum Redaction {
    public static let mask = "***"

    /// A URI password, `password=` in the query string or in a keyword DSN, replaced by `***`.
    /// Any other value comes back unchanged.
    public static func connectionString(_ value: String) -> String {
        if let scheme = value.range(of: "://") {
            let rest = value[scheme.upperBound...]
            let authority = rest.prefix { $0 != "/" && $0 != "?" && !$0.isWhitespace }
            var out = String(value[..<scheme.upperBound])
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                out += authority[..<colon] + ":" + mask + authority[at...]
            } else {
                out += authority
            }
            return out + maskedKeyword(String(rest.dropFirst(authority.count)))
        }
        return maskedKeyword(value)
    }

    /// `password=…` (query string `&`-separated, or keyword DSN: a quoted value or up to a space).
    private static func maskedKeyword(_ text: String) -> String {
        var out = text
        var search = out.startIndex..<out.endIndex
        while let r = out.range(of: "password", options: [.caseInsensitive], range: search) {
            var i = r.upperBound
            while i < out.endIndex, out[i] == " " { i = out.index(after: i) }
            guard i < out.endIndex, out[i] == "=" else { search = r.upperBound..<out.endIndex; continue }
            i = out.index(after: i)
            while i < out.endIndex, out[i] == " " { i = out.index(after: i) }
            let start = i
            if i < out.endIndex, out[i] == "'" {
                i = out.index(after: i)
                while i < out.endIndex, out[i] != "'" {
                    if out[i] == "\\" { i = out.index(after: i); if i == out.endIndex { break } }
                    i = out.index(after: i)
                }
                if i < out.endIndex { i = out.index(after: i) }
            } else {
                while i < out.endIndex, out[i] != "&", out[i] != " ", out[i] != "#", out[i] != "\"", out[i] != "\n" {
                    i = out.index(after: i)
                }
            }
            out.replaceSubrange(start..<i, with: mask)
            let next = out.index(start, offsetBy: mask.count)
            search = next..<out.endIndex
        }
        return out
    }

    /// The password a PostgreSQL URI or keyword DSN carries (as written and percent-decoded).
    public static func passwords(inConnectionString value: String) -> [String] {
        var found: [String] = []
        if let scheme = value.range(of: "://") {
            let authority = value[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" }
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                found.append(String(authority[authority.index(after: colon)..<at]))
            }
        }
        // Whatever `password=` holds (query string or keyword form): what the mask replaced.
        let masked = maskedKeyword(value)
        if masked != value {
            var rest = Substring(value)
            while let r = rest.range(of: "password", options: .caseInsensitive) {
                var tail = rest[r.upperBound...].drop { $0 == " " }
                guard tail.first == "=" else { rest = rest[r.upperBound...]; continue }
                tail = tail.dropFirst().drop { $0 == " " }
                let v = tail.first == "'" ? tail.dropFirst().prefix { $0 != "'" }
                    : tail.prefix { $0 != "&" && $0 != " " && $0 != "#" && $0 != "\"" && $0 != "\n" }
                found.append(String(v))
                rest = tail
            }
        }
        found += found.compactMap { $0.removingPercentEncoding }
        var unique: [String] = []
        for p in found where !p.isEmpty && p != mask && !unique.contains(p) { unique.append(p) }
        return unique
    }

    /// Every secret value `config` holds, for `register(_:)`.
    public static func secrets(in config: Config) -> [String] {
        var out: [String] = []
        for w in config.providers.values.compactMap(\.wns) { out.append(w.clientSecret.value) }
        for z in config.providers.values.compactMap(\.azure) {
            out.append(z.connectionString.value)
            // `Endpoint=…;SharedAccessKeyName=…;SharedAccessKey=<key>`: the key alone too.
            for part in z.connectionString.value.split(separator: ";") {
                let kv = part.split(separator: "=", maxSplits: 1)
                if kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces).lowercased() == "sharedaccesskey" {
                    out.append(String(kv[1]))
                }
            }
        }
        if let registry = config.registry { out += passwords(inConnectionString: registry) }
        out += config.webhooks.map(\.secret.value)
        // Too short to mask without mangling ordinary text: a secret that short is no secret.
        return out.filter { $0.count >= 4 }
    }

    private static let registered = Mutex<[String]>([])

    /// Adds secret values to the list `scrub(_:)` masks, for this process's life.
    public static func register(_ values: [String]) {
        let values = values.filter { $0.count >= 4 }
        guard !values.isEmpty else { return }
        registered.withLock { list in
            for v in values where !list.contains(v) { list.append(v) }
            // Longest first: a connection string is masked whole, not around its key.
            list.sort { $0.count > $1.count }
        }
    }

    /// `text` with every registered secret, and any connection string's password, shown as `***`.
    public static func scrub(_ text: String) -> String {
        let secrets = registered.withLock { $0 }
        var out = text
        for s in secrets where out.contains(s) { out = out.replacingOccurrences(of: s, with: mask) }
        if out.contains("@"), out.contains("://") {
            // Any URI's password: `scheme://user:secret@host` → `scheme://user:***@host`.
            out = out.replacingOccurrences(of: #"://([^/?#@\s:]*):[^@\s/]*@"#, with: "://$1:\(mask)@",
                                           options: .regularExpression)
        }
        if mentionsPassword(out) { out = maskedKeyword(out) }
        return out
    }

    /// Whether `text` holds "password" in any case: a byte scan, since every log line passes
    /// here (serve's access log at tens of thousands of lines a second) and almost none does.
    public static func mentionsPassword(_ text: String) -> Bool {
        let word = Array("password".utf8)
        var utf8 = text.utf8.makeIterator()
        var matched = 0
        while let b = utf8.next() {
            let lower = b >= 0x41 && b <= 0x5A ? b | 0x20 : b
            if lower == word[matched] {
                matched += 1
                if matched == word.count { return true }
            } else {
                matched = lower == word[0] ? 1 : 0
            }
        }
        return false
    }
}
