import PushspoolKit
import PushspoolCore

/// `http.users_file`: an htpasswd file, one `user:hash` a line (`htpasswd -B`). Blank lines and
/// `#` comments are skipped, as Apache does.
///
/// Only bcrypt (`$2y$`, `$2b$`, `$2a$`) and SHA-512-crypt (`$6$`) are taken. Apache's other
/// schemes (MD5 `$apr1$`, SHA-1 `{SHA}`, crypt DES, plain text) are fast enough to guess offline
/// at billions a second, so a line using one is refused rather than quietly accepted. A user whose
/// name cannot make the tag `username:<user>` could never own a device, and a user listed twice is
/// ambiguous: both are refused too. Refused lines are left out, so they never authenticate.
struct HtpasswdFile: Sendable {
    /// User → stored hash, for the lines that passed.
    var hashes: [String: String] = [:]
    /// One line per refused line: `line N (user "u"): why`. Never contains a hash.
    var problems: [String] = []

    init(parsing bytes: [UInt8]) {
        var firstLine: [String: Int] = [:]
        var duplicated: Set<String> = []
        for (number, line) in CredentialFile.lines(bytes) {
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) || line.hasPrefix("#") { continue }
            guard let colon = line.firstIndex(of: ":") else {
                problems.append("line \(number): not user:hash")
                continue
            }
            let user = String(line[..<colon])
            let hash = String(line[line.index(after: colon)...])
            let named = "line \(number) (user \(JSONValue.quoted(user)))"
            if user.isEmpty {
                problems.append("line \(number): the user name is empty")
                continue
            }
            if !TagExpression.isValidTag("username:" + user) {
                problems.append("\(named): the name cannot make the tag username:<user> (letters, digits and _ @ # . : - only, at most \(TagExpression.maxTagLength - 9) characters)")
                continue
            }
            if let why = Self.schemeProblem(hash) {
                problems.append("\(named): \(why)")
                continue
            }
            if let first = firstLine[user] {
                problems.append("\(named): listed again (first on line \(first)); both are refused")
                duplicated.insert(user)
                continue
            }
            firstLine[user] = number
            hashes[user] = hash
        }
        for user in duplicated { hashes[user] = nil }
    }

    /// Why `hash` is not a bcrypt or SHA-512-crypt hash this file takes, naming the scheme when
    /// it is one of Apache's others; nil when it is fine. Never repeats the hash.
    static func schemeProblem(_ hash: String) -> String? {
        let fix = "re-create the line with htpasswd -B"
        if hash.hasPrefix("$2y$") || hash.hasPrefix("$2b$") || hash.hasPrefix("$2a$") {
            return isBcrypt(hash) ? nil : "a malformed bcrypt hash (truncated?); \(fix)"
        }
        if hash.hasPrefix("$6$") { return isSHA512Crypt(hash) ? nil : "a malformed SHA-512-crypt hash (truncated?); \(fix)" }
        if hash.hasPrefix("$apr1$") { return "MD5 ($apr1$) hashes are refused; \(fix)" }
        if hash.hasPrefix("$1$") { return "MD5-crypt ($1$) hashes are refused; \(fix)" }
        if hash.hasPrefix("$5$") { return "SHA-256-crypt ($5$) hashes are refused; \(fix)" }
        if hash.hasPrefix("{SHA}") { return "SHA-1 ({SHA}) hashes are refused; \(fix)" }
        if hash.isEmpty { return "no password hash; \(fix)" }
        if hash.utf8.count == 13 && hash.utf8.allSatisfy(isCryptByte) { return "crypt DES hashes are refused; \(fix)" }
        if hash.hasPrefix("$") { return "an unsupported hash scheme; \(fix)" }
        return "not a password hash (a plain-text password?); \(fix)"
    }

    /// `$2y$NN$` + 22 characters of salt + 31 of hash, cost 04–31.
    static func isBcrypt(_ hash: String) -> Bool {
        let b = Array(hash.utf8)
        guard b.count == 60, b[6] == UInt8(ascii: "$"),
              let cost = Int(String(decoding: b[4..<6], as: UTF8.self)), (4...31).contains(cost) else { return false }
        return b[7...].allSatisfy(isCryptByte)
    }

    /// `$6$` [`rounds=N$`] salt (1–16 characters) `$` 86 characters of hash.
    static func isSHA512Crypt(_ hash: String) -> Bool {
        var parts = hash.utf8.split(separator: UInt8(ascii: "$"), omittingEmptySubsequences: false).dropFirst(2)
        if let first = parts.first, first.starts(with: "rounds=".utf8) { parts = parts.dropFirst() }
        guard parts.count == 2, let salt = parts.first, let digest = parts.last else { return false }
        return (1...16).contains(salt.count) && digest.count == 86 && digest.allSatisfy(isCryptByte)
            && salt.allSatisfy { $0 != UInt8(ascii: ":") && $0 > 0x20 && $0 < 0x7F }
    }

    /// The alphabet of crypt hashes: `./0-9A-Za-z`.
    static func isCryptByte(_ b: UInt8) -> Bool {
        (0x2E...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b)
    }
}
