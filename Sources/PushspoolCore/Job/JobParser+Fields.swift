/// Field names per job kind, and typed readers that record a problem instead of failing, so that
/// one pass finds every problem.
enum Fields {
    static let send: Set<String> = Set([
        "id", "kind", "to_tag", "tags", "broadcast", "pns", "message", "from", "title", "badge", "sound",
        "data", "ttl_seconds", "priority", "collapse_id", "payload", "not_before", "localized",
        "spread_over_seconds", "app", "capped", "secure", "placeholder", "track", "secure_ttl_seconds",
    ]).union(JobParser.nativeFields).union(JobParser.clockFields).union(JobParser.serviceAudiences)
    static let register: Set<String> = ["id", "kind", "platform", "handle", "tags", "lang", "app", "environment", "token_kind", "tz"]
    static let unregister: Set<String> = ["id", "kind", "handle", "app"]
    static let any = send.union(register).union(unregister)

    /// The problem for a field that does not belong to a job of `kind`: a field of another kind, or
    /// a typo, with the nearest field of this kind suggested when one is close (`mesage`).
    static func misplaced(_ key: String, kind: String, problems: inout Problems) {
        let own: Set<String> = kind == "register" ? register : kind == "unregister" ? unregister : send
        if any.contains(key) {
            problems.add(key, "not allowed in \(kind == "unregister" ? "an" : "a") \(kind) job")
        } else {
            unknown(key, among: own, problems: &problems)
        }
    }

    static func unknown(_ key: String, among candidates: Set<String>, problems: inout Problems, prefix: String = "") {
        if let name = Spelling.closest(to: key, among: candidates) {
            problems.add(prefix + key, "unknown field (did you mean \"\(name)\"?)")
        } else {
            problems.add(prefix + key, "unknown field")
        }
    }
}

/// "Did you mean …?" for keys and names a person typed.
public enum Spelling {
    /// The candidate within two edits of `word` (and not further than its own length), if any;
    /// the alphabetically first of equally close ones.
    public static func closest<C: Collection<String>>(to word: String, among candidates: C) -> String? {
        let best = candidates.map { ($0, editDistance(word, $0)) }.min { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }
        guard let (name, distance) = best, distance <= 2, distance < word.count else { return nil }
        return name
    }

    /// Levenshtein distance over characters; keys are short, so the quadratic table is fine.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        var row = Array(0...b.count)
        for i in 1...a.count {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return row[b.count]
    }
}

extension JobParser {
    /// A string, non-empty unless `allowEmpty`.
    static func string(_ value: JSONValue, _ field: String, allowEmpty: Bool = false,
                       problems: inout Problems) -> String? {
        guard case .string(let s) = value else {
            problems.add(field, "must be a string, got \(value.typeName)")
            return nil
        }
        if s.isEmpty && !allowEmpty {
            problems.add(field, "must be a non-empty string")
            return nil
        }
        return s
    }

    /// An integer in `range`. JSON has one number type and some writers print every number with a
    /// fraction (`3.0`), so an integral number written that way is accepted too.
    static func integer(_ value: JSONValue, _ field: String, in range: ClosedRange<Int64>, expected: String,
                        problems: inout Problems) -> Int? {
        switch value {
        case .int(let i) where range.contains(i):
            return Int(i)
        case .int(let i):
            problems.add(field, "must be \(expected), got \(i)")
        case .double(let d) where d == d.rounded() && Double(range.lowerBound) <= d && d <= Double(range.upperBound):
            return Int(d)
        case .double(let d):
            problems.add(field, "must be \(expected), got \(d)")
        default:
            problems.add(field, "must be \(expected), got \(value.typeName)")
        }
        return nil
    }

    /// `pns`: a platform name or a non-empty array of them; `gcm` folds into `fcm`, duplicates are
    /// dropped keeping the first position.
    static func platforms(_ value: JSONValue, problems: inout Problems) -> [Platform] {
        var result: [Platform] = []
        func add(_ item: JSONValue, _ field: String) {
            guard case .string(let name) = item else {
                problems.add(field, "must be a platform name (\(Platform.acceptedNames)), got \(item.typeName)")
                return
            }
            guard let platform = Platform(name: name) else {
                problems.add(field, "unknown platform \(quoted(name)) (expected \(Platform.acceptedNames))")
                return
            }
            if !result.contains(platform) { result.append(platform) }
        }
        switch value {
        case .string:
            add(value, "pns")
        case .array(let items) where items.isEmpty:
            problems.add("pns", "must name at least one platform (\(Platform.acceptedNames))")
        case .array(let items):
            for (i, item) in items.enumerated() { add(item, "pns[\(i)]") }
        default:
            problems.add("pns", "must be a platform name or an array of them, got \(value.typeName)")
        }
        return result
    }

    /// A single tag (`to_tag`, `tags[i]` of a registration).
    static func tag(_ value: JSONValue, _ field: String, problems: inout Problems) -> String? {
        guard case .string(let s) = value else {
            problems.add(field, "must be a tag string, got \(value.typeName)")
            return nil
        }
        guard isValidTag(s) else {
            problems.add(field, "invalid tag \(quoted(s)) (expected \(tagRule))")
            return nil
        }
        return s
    }
}
