import PushspoolKit
import PushspoolCore

/// `http.tokens_file`: the services' bearer tokens, one `<name> <sha256-hex of the token>` a line
/// (blank lines and `#` comments skipped). Only digests are stored, so the file never holds a
/// usable token; a request's token is hashed and compared against every entry.
struct BearerTokens: Sendable {
    /// Token names, in file order; `digests` holds their 32-byte digests back to back.
    private(set) var names: [String] = []
    private var digests: [UInt8] = []
    /// One line per refused line: `line N: why`. Never repeats the digest (an operator who
    /// pasted the token itself by mistake must not see it echoed into a log).
    private(set) var problems: [String] = []

    init(parsing bytes: [UInt8]) {
        var firstLine: [String: Int] = [:]
        var digestLine: [[UInt8]: Int] = [:]
        for (number, line) in CredentialFile.lines(bytes) {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.isEmpty || fields[0].hasPrefix("#") { continue }
            guard fields.count == 2 else {
                problems.append("line \(number): not `<name> <sha256-hex of the token>` (printf '%s' \"$TOKEN\" | sha256sum)")
                continue
            }
            let name = String(fields[0])
            guard TagExpression.isValidTag(name) else {
                problems.append("line \(number): the name must be 1–\(TagExpression.maxTagLength) characters of letters, digits and _ @ # . : -")
                continue
            }
            guard let digest = Self.hexDigest(fields[1]) else {
                problems.append("line \(number) (\(name)): the digest must be 64 lowercase hex digits (printf '%s' \"$TOKEN\" | sha256sum)")
                continue
            }
            if let first = firstLine[name] {
                problems.append("line \(number) (\(name)): the name is taken by line \(first)")
                continue
            }
            if let first = digestLine[digest] {
                problems.append("line \(number) (\(name)): the same token as line \(first)")
                continue
            }
            firstLine[name] = number
            digestLine[digest] = number
            names.append(name)
            digests += digest
        }
    }

    /// The name of the entry whose digest is SHA-256(`token`), else nil. Every entry is compared
    /// in full and the match is selected with masks, so the time taken does not tell which entry
    /// (or how much of one) matched.
    func name(of token: [UInt8]) -> String? {
        let digest = SHA256.digest(token)
        var found = -1
        for i in names.indices {
            let mask = ConstantTime.equalMask(digests[(i * 32)..<(i * 32 + 32)], digest)
            found = (i & mask) | (found & ~mask)
        }
        return found >= 0 ? names[found] : nil
    }

    /// 32 bytes from exactly 64 lowercase hex digits (`sha256sum` prints lowercase).
    static func hexDigest(_ text: Substring) -> [UInt8]? {
        let b = Array(text.utf8)
        guard b.count == 64 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for i in stride(from: 0, to: 64, by: 2) {
            guard let hi = nibble(b[i]), let lo = nibble(b[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
        }
        return out
    }
}
