import Foundation

/// The campaign list's jobs as `CampaignIndex` keeps them between requests: a fixed-size record
/// per job (48 bytes) and the job's id, file name and headline in one shared byte arena, the
/// lists of apps and platforms (a few distinct values over thousands of jobs) interned. 100,000
/// jobs take about 4 MB of records and their text once, instead of seven Strings each; a search
/// scans the arena's bytes without making a String per job.
struct CampaignRecords: Sendable {
    struct Record: Sendable {
        /// The job file's modification time (seconds since 1970).
        var modified: Double
        /// A send job's `not_before` (seconds since 1970); NaN: none. What tells a waiting job
        /// from a scheduled one without reading its file again.
        var notBefore: Double
        /// The file's inode: a file of the same name put in its place is read again.
        var ino: UInt64
        /// Where its bytes start in the arena: the id, then the file name (unless it is
        /// `<id>.json`), then the headline.
        var start: UInt32
        var apps: UInt32
        var platforms: UInt32
        var idLength: UInt16
        /// 0: the file is named `<id>.json`.
        var nameLength: UInt16
        /// `noHeadline`: none (a secure job, or not a send job).
        var headlineLength: UInt16
        var folder: UInt8
        var kind: UInt8
        /// 0 until known; else 1 + the ended state's place in `JobState.allCases`.
        var ended: UInt8
        var secure: Bool

        var bytes: Int { Int(idLength) + Int(nameLength) + (headlineLength == Self.noHeadline ? 0 : Int(headlineLength)) }
        static let noHeadline = UInt16.max
    }

    /// What a job file says, before it has a place in the arena.
    struct Fields {
        var id: String
        var name: String
        var folder: UInt8
        var modified: Double
        var kind: UInt8
        var apps: String
        var platforms: String
        var headline: String?
        var secure: Bool
        var notBefore: Date?
        var ino: UInt64
    }

    static let kinds = ["invalid", "send", "register", "unregister"]
    static let states = JobState.allCases

    /// Every job, newest first (then by file name, last first).
    var records: [Record] = []
    var arena: [UInt8] = []
    /// Counts changes of `records`' order (an index into it holds until the next).
    private(set) var generation = 0
    var strings: [String] = [""]
    var stringIDs: [String: UInt32] = ["": 0]

    // MARK: Reading a record

    func id(_ r: Record) -> String { text(Int(r.start), Int(r.idLength)) }

    func name(_ r: Record) -> String {
        r.nameLength == 0 ? id(r) + ".json" : text(Int(r.start) + Int(r.idLength), Int(r.nameLength))
    }

    func headline(_ r: Record) -> String? {
        r.headlineLength == Record.noHeadline ? nil : text(Int(r.start) + Int(r.idLength) + Int(r.nameLength), Int(r.headlineLength))
    }

    func string(_ i: UInt32) -> String { strings[Int(i)] }
    func kind(_ r: Record) -> String { Self.kinds[Int(r.kind)] }
    func ended(_ r: Record) -> String? { r.ended == 0 ? nil : Self.states[Int(r.ended) - 1].rawValue }
    func notBefore(_ r: Record) -> Date? { r.notBefore.isNaN ? nil : Date(timeIntervalSince1970: r.notBefore) }

    /// The interned id of a list (nil when it was never seen: no record has it).
    func stringID(_ s: String) -> UInt32? { stringIDs[s] }

    private func text(_ start: Int, _ count: Int) -> String {
        arena.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[start..<start + count]), as: UTF8.self) }
    }

    /// The record's file name without its `.json` (every job file's name ends so): the id, or
    /// the stored name's start.
    private static func stem(_ r: Record, _ a: UnsafeBufferPointer<UInt8>) -> Slice<UnsafeBufferPointer<UInt8>> {
        let start = Int(r.start)
        if r.nameLength == 0 { return a[start..<start + Int(r.idLength)] }
        return a[start + Int(r.idLength)..<start + Int(r.idLength) + max(0, Int(r.nameLength) - 5)]
    }

    /// Whether the record's file name is `name` (its bytes, `.json` at the end).
    func hasName(_ r: Record, _ name: [UInt8]) -> Bool {
        arena.withUnsafeBufferPointer { Self.stem(r, $0).elementsEqual(name.dropLast(5)) }
    }

    /// The hash `nameHash(of:)` gives the record's file name.
    func nameHash(_ r: Record) -> UInt64 { arena.withUnsafeBufferPointer { SpoolName.fnv1a(Self.stem(r, $0)) } }

    /// A job file name's hash, its `.json` left out (as `nameHash(_:)` hashes a record's).
    static func nameHash(of name: [UInt8]) -> UInt64 { SpoolName.fnv1a(name.dropLast(5)) }

    // MARK: Searching

    /// Whether the id or the headline holds `query`, ignoring case. `query` is lowercased
    /// already; an ASCII query is compared byte by byte, folding A–Z, with no String made.
    func contains(_ r: Record, lowercased query: [UInt8], ascii: Bool) -> Bool {
        let start = Int(r.start)
        let headlineStart = start + Int(r.idLength) + Int(r.nameLength)
        guard ascii else {
            let q = String(decoding: query, as: UTF8.self)
            return id(r).lowercased().contains(q) || (headline(r)?.lowercased().contains(q) ?? false)
        }
        return arena.withUnsafeBufferPointer { a in
            Self.find(query, in: UnsafeBufferPointer(rebasing: a[start..<start + Int(r.idLength)]))
                || (r.headlineLength != Record.noHeadline
                    && Self.find(query, in: UnsafeBufferPointer(rebasing: a[headlineStart..<headlineStart + Int(r.headlineLength)])))
        }
    }

    /// Whether `haystack`, its ASCII capitals folded, holds `needle` (lowercase ASCII).
    static func find(_ needle: [UInt8], in haystack: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = needle.count
        guard n > 0 else { return true }
        guard haystack.count >= n else { return false }
        @inline(__always) func fold(_ b: UInt8) -> UInt8 { b &- 0x41 < 26 ? b | 0x20 : b }
        return needle.withUnsafeBufferPointer { q in
            let first = q[0]
            var i = 0
            let last = haystack.count - n
            while i <= last {
                if fold(haystack[i]) == first {
                    var j = 1
                    while j < n && fold(haystack[i + j]) == q[j] { j += 1 }
                    if j == n { return true }
                }
                i += 1
            }
            return false
        }
    }

    // MARK: Changing

    /// A record for `fields`, its text added to the arena (the record is not listed until `replace`).
    mutating func make(_ f: Fields) -> Record {
        let start = UInt32(arena.count)
        let id = Array(f.id.utf8.prefix(Int(UInt16.max - 1)))
        arena += id
        var nameLength: UInt16 = 0
        if f.name != f.id + ".json" {
            let name = f.name.utf8.prefix(Int(UInt16.max - 1))
            arena += name
            nameLength = UInt16(name.count)
        }
        var headlineLength = Record.noHeadline
        if let h = f.headline {
            let bytes = h.utf8.prefix(Int(UInt16.max - 1))
            arena += bytes
            headlineLength = UInt16(bytes.count)
        }
        return Record(modified: f.modified, notBefore: f.notBefore?.timeIntervalSince1970 ?? .nan, ino: f.ino, start: start, apps: intern(f.apps), platforms: intern(f.platforms), idLength: UInt16(id.count),
                      nameLength: nameLength, headlineLength: headlineLength, folder: f.folder, kind: f.kind, ended: 0, secure: f.secure)
    }

    private mutating func intern(_ s: String) -> UInt32 {
        if let i = stringIDs[s] { return i }
        strings.append(s)
        stringIDs[s] = UInt32(strings.count - 1)
        return UInt32(strings.count - 1)
    }

    /// The records of `folders` become `listed` (each from `make`, or one of its records kept);
    /// the list sorted again, and the arena compacted once it is half garbage or half empty.
    mutating func replace(folders: Set<UInt8>, with listed: [Record]) {
        var kept = records.filter { !folders.contains($0.folder) }
        // The old list given back before the new one is sorted: not held twice.
        records = []
        kept.append(contentsOf: listed)
        arena.withUnsafeBufferPointer { buf in
            kept.sort { a, b in
                if a.modified != b.modified { return a.modified > b.modified }
                return Self.stem(b, buf).lexicographicallyPrecedes(Self.stem(a, buf))
            }
        }
        records = kept
        generation += 1
        let live = records.reduce(0) { $0 + $1.bytes }
        if arena.count - live > live || arena.capacity > live + live / 2 + (64 << 10) { compact() }
    }

    /// The arena again with only what records point at, allocated to its size.
    private mutating func compact() {
        var fresh: [UInt8] = []
        fresh.reserveCapacity(records.reduce(0) { $0 + $1.bytes })
        arena.withUnsafeBufferPointer { a in
            for i in records.indices {
                let r = records[i]
                let start = Int(r.start)
                records[i].start = UInt32(fresh.count)
                fresh.append(contentsOf: UnsafeBufferPointer(rebasing: a[start..<start + r.bytes]))
            }
        }
        arena = fresh
    }

    /// Ended states learned from a copy of `generation`: kept when the list is still that one.
    mutating func learn(_ ended: [(index: Int, state: UInt8)], generation: Int) {
        guard generation == self.generation else { return }
        for e in ended { records[e.index].ended = e.state }
    }
}
