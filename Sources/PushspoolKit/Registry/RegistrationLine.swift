import PushspoolCore

/// The import's fast path for one JSON Lines registration: a flat object of plain ASCII strings
/// (`id`, `platform`, `handle`, `lang`, `token_kind`, `tz`) and an array of them (`tags`), decoded without building
/// a JSON tree. Anything else (escapes, non-ASCII, null, unknown or repeated fields, a value that
/// fails validation) returns nil, and the caller takes the general path (`JSONParser`), which
/// accepts every valid line and names the field of every invalid one: this path only ever
/// agrees with it, faster.
struct RegistrationLine {
    /// Language tags seen so far: an import has a handful of distinct ones among a million lines.
    private var languages: [String: LanguageTag] = [:]
    /// Zone names seen so far and found known (`ZoneName`): a few hundred in a file.
    private var zones: Set<String> = []
    /// The same, by their bytes' FNV-1a hash, for the fast path (no String made per line).
    private var zoneBytes: [UInt64: [UInt8]] = [:]

    /// `LanguageTag(text)`, remembered (a handful of distinct ones in a file).
    mutating func languageTag(_ text: String) -> LanguageTag? {
        if let known = languages[text] { return known }
        guard let parsed = LanguageTag(text) else { return nil }
        if languages.count < 256 { languages[text] = parsed }
        return parsed
    }

    /// Whether `name` is a zone the system knows, remembered per distinct name.
    mutating func isKnownZone(_ name: String) -> Bool {
        if zones.contains(name) { return true }
        guard ZoneName.timeZone(name) != nil else { return false }
        if zones.count < 1024 { zones.insert(name) }
        return true
    }

    /// `isKnownZone` on a name's bytes: a hash and a compare per line once the name was seen.
    mutating func isKnownZone(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { hash = (hash ^ UInt64(b)) &* 0x100_0000_01b3 }
        if let known = zoneBytes[hash], known.elementsEqual(bytes) { return true }
        guard isKnownZone(String(decoding: bytes, as: UTF8.self)) else { return false }
        if zoneBytes.count < 1024 { zoneBytes[hash] = Array(bytes) }
        return true
    }

    mutating func decode(_ line: [UInt8]) -> Registration? {
        line.withUnsafeBufferPointer { decode($0) }
    }

    private mutating func decode(_ b: UnsafeBufferPointer<UInt8>) -> Registration? {
        var i = 0
        func skipSpace() { while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0D { i += 1 } }
        /// A string with no escape and no byte outside printable ASCII; i moves past it.
        func string() -> String? {
            guard i < b.count, b[i] == UInt8(ascii: "\"") else { return nil }
            let start = i + 1
            var j = start
            while j < b.count, b[j] != UInt8(ascii: "\"") {
                guard b[j] >= 0x20, b[j] < 0x80, b[j] != UInt8(ascii: "\\") else { return nil }
                j += 1
            }
            guard j < b.count else { return nil }
            i = j + 1
            return String(decoding: UnsafeBufferPointer(rebasing: b[start..<j]), as: UTF8.self)
        }

        var id: String?, platform: String?, handle: String?, lang: String?, tokenKind: String?, tz: String?, tags: [String]?
        skipSpace()
        guard i < b.count, b[i] == UInt8(ascii: "{") else { return nil }
        i += 1
        skipSpace()
        if i < b.count, b[i] == UInt8(ascii: "}") { return nil }
        while true {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            skipSpace()
            switch key {
            case "tags":
                guard tags == nil, i < b.count, b[i] == UInt8(ascii: "[") else { return nil }
                i += 1
                var list: [String] = []
                skipSpace()
                if i < b.count, b[i] == UInt8(ascii: "]") {
                    i += 1
                } else {
                    while true {
                        skipSpace()
                        guard let t = string() else { return nil }
                        list.append(t)
                        skipSpace()
                        guard i < b.count else { return nil }
                        if b[i] == UInt8(ascii: "]") { i += 1; break }
                        guard b[i] == UInt8(ascii: ",") else { return nil }
                        i += 1
                    }
                }
                tags = list
            case "id": guard id == nil, let v = string() else { return nil }; id = v
            case "platform": guard platform == nil, let v = string() else { return nil }; platform = v
            case "handle": guard handle == nil, let v = string() else { return nil }; handle = v
            case "lang": guard lang == nil, let v = string() else { return nil }; lang = v
            case "token_kind": guard tokenKind == nil, let v = string() else { return nil }; tokenKind = v
            case "tz": guard tz == nil, let v = string() else { return nil }; tz = v
            default: return nil
            }
            skipSpace()
            guard i < b.count else { return nil }
            if b[i] == UInt8(ascii: "}") { i += 1; break }
            guard b[i] == UInt8(ascii: ",") else { return nil }
            i += 1
        }
        skipSpace()
        guard i == b.count, let platformName = platform, let p = Platform(name: platformName),
              let handle, p.handleProblem(handle) == nil, p.canonicalHandle(handle) == handle, let tags else { return nil }
        var kind: APNsTokenKind?
        if let tokenKind {
            guard p == .apns, let k = APNsTokenKind(rawValue: tokenKind) else { return nil }
            kind = k
        }
        var language: LanguageTag?
        if let lang {
            if let known = languages[lang] {
                language = known
            } else {
                guard let parsed = LanguageTag(lang) else { return nil }
                if languages.count < 256 { languages[lang] = parsed }
                language = parsed
            }
        }
        if let tz { guard isKnownZone(tz) else { return nil } }
        let r = Registration(id: id, platform: p, handle: handle, tags: tags, lang: language, tokenKind: kind, tz: tz)
        return r.problem() == nil ? r : nil
    }
}
