import Glibc

/// What a bulk load wrote, counted per (app, platform, token kind) as the rows store them, for
/// `device_counts` (which triggers keep up to date on every other write, but which the bulk load
/// drops while it appends: a trigger's statement per row would cost the import more than a
/// broadcast saves). The texts are compared as bytes, no String made per row. A row of the
/// default app and token kind (every line of the import's fast path) is counted by its platform
/// alone, read as one 8-byte word; any other row's key is looked for first where a cheap hash of
/// its lengths and first bytes last found it (a registry holds a handful of keys), then among all.
struct DeviceTally {
    /// What a row naming neither app nor token kind stores.
    let defaultApp: String
    let defaultTokenKind: String
    /// Rows of the default app and token kind: their platform's bytes as a word, and how many.
    private var byPlatform: [(word: UInt64, count: Int, total: Int64)] = []

    /// Where a key's texts sit in `texts`: app, platform and token kind, one after another.
    private struct Key {
        var start: Int
        var app: Int
        var platform: Int
        var tokenKind: Int
    }

    private var texts: [UInt8] = []
    private var keys: [Key] = []
    private var totals: [Int64] = []
    /// The key last found for each hash (-1: none yet).
    private var recent = [Int](repeating: -1, count: 64)

    init(defaultApp: String, defaultTokenKind: String) {
        (self.defaultApp, self.defaultTokenKind) = (defaultApp, defaultTokenKind)
    }

    /// A row of the default app and token kind.
    mutating func add(platform: UnsafeBufferPointer<UInt8>) {
        guard platform.count <= 8 else {
            return Array(defaultApp.utf8).withUnsafeBufferPointer { app in
                Array(defaultTokenKind.utf8).withUnsafeBufferPointer { kind in add(app: app, platform: platform, tokenKind: kind) }
            }
        }
        var word: UInt64 = 0
        for (i, byte) in platform.enumerated() { word |= UInt64(byte) << (8 * i) }
        for i in byPlatform.indices where byPlatform[i].word == word && byPlatform[i].count == platform.count {
            byPlatform[i].total += 1
            return
        }
        byPlatform.append((word, platform.count, 1))
    }

    mutating func add(app: UnsafeBufferPointer<UInt8>, platform: UnsafeBufferPointer<UInt8>, tokenKind: UnsafeBufferPointer<UInt8>) {
        let hash = (platform.count &* 7 &+ Int(platform.first ?? 0) &+ app.count &* 13 &+ Int(app.last ?? 0) &* 3
                    &+ tokenKind.count &* 5 &+ Int(tokenKind.first ?? 0)) & 63
        let hinted = recent[hash]
        if hinted >= 0, matches(hinted, app, platform, tokenKind) {
            totals[hinted] += 1
            return
        }
        var found = -1
        for i in keys.indices where matches(i, app, platform, tokenKind) {
            found = i
            break
        }
        if found < 0 {
            keys.append(Key(start: texts.count, app: app.count, platform: platform.count, tokenKind: tokenKind.count))
            texts.append(contentsOf: app)
            texts.append(contentsOf: platform)
            texts.append(contentsOf: tokenKind)
            totals.append(0)
            found = keys.count - 1
        }
        recent[hash] = found
        totals[found] += 1
    }

    /// Every key with its count, as the texts `device_counts` stores.
    /// A key can appear twice (a platform of the defaults counted both ways): `device_counts` adds them up.
    var counts: [(app: String, platform: String, tokenKind: String, total: Int64)] {
        byPlatform.map { p in
            let bytes = (0..<p.count).map { UInt8(truncatingIfNeeded: p.word >> (8 * $0)) }
            return (defaultApp, String(decoding: bytes, as: UTF8.self), defaultTokenKind, p.total)
        } + keys.indices.map { i in
            let k = keys[i]
            func text(_ from: Int, _ count: Int) -> String { String(decoding: texts[from..<(from + count)], as: UTF8.self) }
            return (text(k.start, k.app), text(k.start + k.app, k.platform), text(k.start + k.app + k.platform, k.tokenKind), totals[i])
        }
    }

    private func matches(_ i: Int, _ app: UnsafeBufferPointer<UInt8>, _ platform: UnsafeBufferPointer<UInt8>,
                         _ tokenKind: UnsafeBufferPointer<UInt8>) -> Bool {
        let k = keys[i]
        guard k.app == app.count, k.platform == platform.count, k.tokenKind == tokenKind.count else { return false }
        return texts.withUnsafeBufferPointer { all in
            func same(_ at: Int, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
                guard let b = bytes.baseAddress, bytes.count > 0 else { return true }
                return memcmp(all.baseAddress! + at, b, bytes.count) == 0
            }
            return same(k.start + k.app, platform) && same(k.start, app) && same(k.start + k.app + k.platform, tokenKind)
        }
    }
}
