import Foundation
import PushspoolCore

/// A batch of bulk-load rows in one byte arena: the reading thread decodes, validates and lays
/// out each row (id, platform, handle, lang, tag list, rowid) and the writing thread only binds
/// pointers into the arena (`SQLITE_STATIC`) and steps; no String or array per row on either side
/// of the common path.
struct PackedBatch: Sendable {
    /// Offset and length of some bytes in `bytes`; `count < 0` is SQL NULL.
    struct Span: Sendable {
        var start: Int32
        var count: Int32
        static let null = Span(start: 0, count: -1)
    }
    struct Row: Sendable {
        var rowid: Int64
        var id: Span
        var platform: Span
        /// The row is an APNs device: only those store an environment.
        var isAPNs: Bool
        var handle: Span
        var lang: Span
        /// Null (the default app, its APNs environment) unless the line names them.
        var app: Span = .null
        var environment: Span = .null
        /// Null (`device`) unless the line names an APNs token kind.
        var tokenKind: Span = .null
        /// The IANA zone name; null: none given.
        var tz: Span = .null
        /// ` a b c `: sorted, deduplicated.
        var tagList: Span
        /// This row's entries in `tags` (each a span inside `tagList`).
        var firstTag: Int32
        var tagCount: Int32
    }

    var bytes: [UInt8] = []
    var rows: [Row] = []
    var tags: [Span] = []

    init(capacity: Int) {
        bytes.reserveCapacity(capacity * 160)
        rows.reserveCapacity(capacity)
        tags.reserveCapacity(capacity * 3)
    }

    var count: Int { rows.count }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        rows.removeAll(keepingCapacity: true)
        tags.removeAll(keepingCapacity: true)
    }

    mutating func append(_ b: UnsafeBufferPointer<UInt8>) -> Span {
        let start = bytes.count
        bytes.append(contentsOf: b)
        return Span(start: Int32(start), count: Int32(b.count))
    }

    mutating func append(_ s: String) -> Span {
        var s = s
        return s.withUTF8 { append($0) }
    }

    /// Appends the tag list ` a b c ` of `sorted` (sorted, deduplicated tags) and one `tags`
    /// entry per tag; returns the list's span and the index of the first entry.
    private mutating func appendTagList(count: Int, _ tag: (Int) -> UnsafeBufferPointer<UInt8>) -> (Span, Int32) {
        let listStart = bytes.count
        let first = Int32(tags.count)
        bytes.append(0x20)
        for i in 0..<count {
            let t = tag(i)
            tags.append(Span(start: Int32(bytes.count), count: Int32(t.count)))
            bytes.append(contentsOf: t)
            bytes.append(0x20)
        }
        return (Span(start: Int32(listStart), count: Int32(bytes.count - listStart)), first)
    }

    /// A registration that took the general path (already validated): laid out exactly as the
    /// fast path lays out its rows.
    mutating func append(_ r: Registration, rowid: Int64) {
        let id = append(r.id ?? UUID().uuidString.lowercased())
        let platform = append(r.platform.rawValue)
        let handle = append(r.handle)
        let lang = r.lang.map { append($0.value) } ?? .null
        let sorted = r.tags.count < 2 ? r.tags : Array(Set(r.tags)).sorted()
        let listStart = bytes.count
        let first = Int32(tags.count)
        bytes.append(0x20)
        for t in sorted {
            tags.append(Span(start: Int32(bytes.count), count: Int32(t.utf8.count)))
            bytes.append(contentsOf: t.utf8)
            bytes.append(0x20)
        }
        let list = Span(start: Int32(listStart), count: Int32(bytes.count - listStart))
        rows.append(Row(rowid: rowid, id: id, platform: platform, isAPNs: r.platform == .apns, handle: handle, lang: lang,
                        app: r.app.map { append($0) } ?? .null, environment: r.environment.map { append($0.rawValue) } ?? .null,
                        tokenKind: r.tokenKind.map { append($0.rawValue) } ?? .null, tz: r.tz.map { append($0) } ?? .null,
                        tagList: list, firstTag: first, tagCount: Int32(sorted.count)))
    }

    /// The fast path's row: spans of the line itself (`line`), tags already checked.
    mutating func append(line: UnsafeBufferPointer<UInt8>, rowid: Int64, id: Range<Int>?, platform: Platform,
                         handle: Range<Int>, lang: LanguageTag?, tokenKind: Range<Int>? = nil, tz: Range<Int>? = nil,
                         tags: UnsafeMutableBufferPointer<Range<Int>>) {
        let idSpan: Span
        if let id {
            idSpan = append(UnsafeBufferPointer(rebasing: line[id]))
        } else {
            idSpan = append(UUID().uuidString.lowercased())
        }
        let platformSpan = append(platform.rawValue)
        let handleSpan = append(UnsafeBufferPointer(rebasing: line[handle]))
        let langSpan = lang.map { append($0.value) } ?? .null
        let kindSpan = tokenKind.map { append(UnsafeBufferPointer(rebasing: line[$0])) } ?? .null
        let tzSpan = tz.map { append(UnsafeBufferPointer(rebasing: line[$0])) } ?? .null
        // Sort (byte order is String order for ASCII) and deduplicate: a handful of tags.
        var n = tags.count
        if n > 1 {
            func less(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
                let m = min(a.count, b.count)
                let c = memcmp(line.baseAddress! + a.lowerBound, line.baseAddress! + b.lowerBound, m)
                return c != 0 ? c < 0 : a.count < b.count
            }
            for i in 1..<n {
                let x = tags[i]
                var j = i
                while j > 0, less(x, tags[j - 1]) { tags[j] = tags[j - 1]; j -= 1 }
                tags[j] = x
            }
            var w = 1
            for i in 1..<n where less(tags[w - 1], tags[i]) { tags[w] = tags[i]; w += 1 }
            n = w
        }
        let (list, first) = appendTagList(count: n) { UnsafeBufferPointer(rebasing: line[tags[$0]]) }
        rows.append(Row(rowid: rowid, id: idSpan, platform: platformSpan, isAPNs: platform == .apns, handle: handleSpan, lang: langSpan,
                        tokenKind: kindSpan, tz: tzSpan, tagList: list, firstTag: first, tagCount: Int32(n)))
    }
}

extension RegistrationLine {
    /// `decode`'s rules checked on the line's bytes, the row appended to `batch`: false (nothing
    /// appended) for anything `decode` would not take, which then goes the general way.
    mutating func pack(_ b: UnsafeBufferPointer<UInt8>, rowid: Int64, into batch: inout PackedBatch) -> Bool {
        // Up to 16 tags on the stack; more go the general way.
        withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: 16) { tagBuffer -> Bool in
            var c = JSONLineCursor(b)
            var id: Range<Int>?, platform: Range<Int>?, handle: Range<Int>?, lang: Range<Int>?, tokenKind: Range<Int>?, tz: Range<Int>?
            var sawTags = false
            var tagCount = 0
            c.skipSpace()
            guard c.take(UInt8(ascii: "{")) else { return false }
            c.skipSpace()
            if c.at(UInt8(ascii: "}")) { return false }
            while true {
                c.skipSpace()
                guard let key = c.string() else { return false }
                c.skipSpace()
                guard c.take(UInt8(ascii: ":")) else { return false }
                c.skipSpace()
                if c.equals(key, "tags") {
                    guard !sawTags, c.take(UInt8(ascii: "[")) else { return false }
                    sawTags = true
                    c.skipSpace()
                    if !c.take(UInt8(ascii: "]")) {
                        while true {
                            c.skipSpace()
                            guard let t = c.string(), tagCount < 16 else { return false }
                            guard t.count >= 1, t.count <= TagExpression.maxTagLength,
                                  b[t].allSatisfy(Self.isTagByte) else { return false }
                            tagBuffer[tagCount] = t
                            tagCount += 1
                            c.skipSpace()
                            guard !c.atEnd else { return false }
                            if c.take(UInt8(ascii: "]")) { break }
                            guard c.take(UInt8(ascii: ",")) else { return false }
                        }
                    }
                } else if c.equals(key, "id") {
                    guard id == nil, let v = c.string() else { return false }
                    id = v
                } else if c.equals(key, "platform") {
                    guard platform == nil, let v = c.string() else { return false }
                    platform = v
                } else if c.equals(key, "handle") {
                    guard handle == nil, let v = c.string() else { return false }
                    handle = v
                } else if c.equals(key, "lang") {
                    guard lang == nil, let v = c.string() else { return false }
                    lang = v
                } else if c.equals(key, "token_kind") {
                    guard tokenKind == nil, let v = c.string() else { return false }
                    tokenKind = v
                } else if c.equals(key, "tz") {
                    guard tz == nil, let v = c.string() else { return false }
                    tz = v
                } else {
                    return false
                }
                c.skipSpace()
                guard !c.atEnd else { return false }
                if c.take(UInt8(ascii: "}")) { break }
                guard c.take(UInt8(ascii: ",")) else { return false }
            }
            c.skipSpace()
            guard c.atEnd, sawTags, let platformRange = platform, let handle else { return false }
            let p: Platform
            if c.equals(platformRange, "apns") { p = .apns }
            else if c.equals(platformRange, "fcm") || c.equals(platformRange, "gcm") { p = .fcm }
            else if c.equals(platformRange, "wns") { p = .wns }
            else { return false }
            // RegistrationRules: the id rule on plain ASCII; handle non-empty, ≤ 4096 bytes, no
            // space or control.
            if let id {
                guard Identifier.isValidASCIIDeviceID(b[id]) else { return false }
            }
            guard !handle.isEmpty, handle.count <= Registration.maxHandleLength, handle.count <= Platform.maxHandleBytes,
                  !b[handle].contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { return false }
            // Platform.handleProblem on bytes.
            let h = b[handle]
            switch p {
            case .apns:
                guard h.count >= 64, h.count % 2 == 0,
                      h.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) })
                else { return false }   // uppercase hex too: the general path stores it lowercased
            case .fcm:
                guard h.allSatisfy({ b in
                    (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                        || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: ":") || b == UInt8(ascii: ".")
                }) else { return false }
            case .wns:
                guard h.count >= 8, memcmp(b.baseAddress! + handle.lowerBound, "https://", 8) == 0 else { return false }
                let authority = h.dropFirst(8).prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") }
                guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return false }
            case .web, .hms, .adm:
                return false   // a PushSubscription is JSON; HMS and ADM: the general path checks them
            }
            // A token kind: one of Apple's, on an APNs line only (else the general path names it).
            if let tokenKind {
                guard p == .apns, Self.isTokenKind(UnsafeBufferPointer(rebasing: b[tokenKind])) else { return false }
            }
            var language: LanguageTag?
            if let lang {
                let text = String(decoding: UnsafeBufferPointer(rebasing: b[lang]), as: UTF8.self)
                guard let parsed = languageTag(text) else { return false }
                language = parsed
            }
            if let tz {
                guard isKnownZone(bytes: UnsafeBufferPointer(rebasing: b[tz])) else { return false }
            }
            batch.append(line: b, rowid: rowid, id: id, platform: p, handle: handle, lang: language, tokenKind: tokenKind, tz: tz,
                         tags: UnsafeMutableBufferPointer(rebasing: tagBuffer[0..<tagCount]))
            return true
        }
    }

    /// One of `APNsTokenKind`'s names, compared on the bytes.
    static func isTokenKind(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        APNsTokenKind.allCases.contains { $0.rawValue.utf8.elementsEqual(bytes) }
    }

    /// `[A-Za-z0-9_@#.:-]`, as `TagExpression.isValidTag`.
    static func isTagByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "#"),
             UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }
}
