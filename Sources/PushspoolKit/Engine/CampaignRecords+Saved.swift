import Foundation

/// The campaign list as `CampaignIndex` saves it in the spool's state folder, so that `serve`
/// started again lists 100,000 jobs without reading their files: its records, their text and
/// the interned lists, as they are in memory, each number written at a fixed width. A record is
/// used again only for the file of the same name and inode in the same folder; anything that
/// does not read back whole is ignored (the files are read instead).
extension CampaignRecords {
    /// Changed whenever what is written changes.
    static let savedFormat: [UInt8] = Array("pushspool campaign index 1\n".utf8)

    /// The whole list as one block of bytes.
    func saved() -> [UInt8] {
        var all: [UInt8] = []
        saved { all += $0 }
        return all
    }

    /// The list's bytes handed to `write` in pieces of about a megabyte.
    func saved(_ write: ([UInt8]) -> Void) {
        var out = Self.savedFormat
        out.reserveCapacity(Self.piece + 64)
        func flush(over size: Int) {
            guard out.count > size else { return }
            write(out)
            out.removeAll(keepingCapacity: true)
        }
        func put<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        put(UInt32(strings.count))
        for s in strings {
            put(UInt32(s.utf8.count))
            out.append(contentsOf: s.utf8)
            flush(over: Self.piece)
        }
        put(UInt32(arena.count))
        flush(over: 0)
        write(arena)
        put(UInt32(records.count))
        for r in records {
            flush(over: Self.piece)
            put(r.modified.bitPattern)
            put(r.notBefore.bitPattern)
            put(r.ino)
            put(r.start)
            put(r.apps)
            put(r.platforms)
            put(r.idLength)
            put(r.nameLength)
            put(r.headlineLength)
            put(r.folder)
            put(r.kind)
            put(r.ended)
            put(UInt8(r.secure ? 1 : 0))
        }
        flush(over: 0)
    }

    private static let piece = 1 << 20

    /// The records `saved()` wrote; nil when `bytes` are anything else (another format, cut short, out of range).
    init?(saved bytes: [UInt8]) {
        guard bytes.starts(with: Self.savedFormat) else { return nil }
        var i = Self.savedFormat.count
        func take<T: FixedWidthInteger>(_: T.Type) -> T? {
            let size = MemoryLayout<T>.size
            guard bytes.count - i >= size else { return nil }
            var v: T = 0
            withUnsafeMutableBytes(of: &v) { $0.copyBytes(from: bytes[i..<i + size]) }
            i += size
            return T(littleEndian: v)
        }
        func slice(_ n: Int) -> ArraySlice<UInt8>? {
            guard n >= 0, bytes.count - i >= n else { return nil }
            defer { i += n }
            return bytes[i..<i + n]
        }
        guard let stringCount = take(UInt32.self), stringCount >= 1 else { return nil }
        var strings: [String] = []
        for _ in 0..<stringCount {
            guard let n = take(UInt32.self), let s = slice(Int(n)) else { return nil }
            strings.append(String(decoding: s, as: UTF8.self))
        }
        guard strings.first == "", let arenaCount = take(UInt32.self), let arena = slice(Int(arenaCount)),
              let recordCount = take(UInt32.self) else { return nil }
        var records: [Record] = []
        records.reserveCapacity(Int(min(recordCount, 1 << 24)))
        for _ in 0..<recordCount {
            guard let modified = take(UInt64.self), let notBefore = take(UInt64.self), let ino = take(UInt64.self),
                  let start = take(UInt32.self), let apps = take(UInt32.self), let platforms = take(UInt32.self),
                  let idLength = take(UInt16.self), let nameLength = take(UInt16.self), let headlineLength = take(UInt16.self),
                  let folder = take(UInt8.self), let kind = take(UInt8.self), let ended = take(UInt8.self), let secure = take(UInt8.self)
            else { return nil }
            let r = Record(modified: Double(bitPattern: modified), notBefore: Double(bitPattern: notBefore), ino: ino, start: start,
                           apps: apps, platforms: platforms, idLength: idLength, nameLength: nameLength, headlineLength: headlineLength,
                           folder: folder, kind: kind, ended: ended, secure: secure == 1)
            guard Int(r.start) + r.bytes <= arena.count, Int(apps) < strings.count, Int(platforms) < strings.count,
                  folder < 4, Int(kind) < Self.kinds.count, Int(ended) <= Self.states.count, r.idLength > 0 else { return nil }
            records.append(r)
        }
        guard i == bytes.count else { return nil }
        self.init()
        self.records = records
        self.arena = Array(arena)
        self.strings = strings
        stringIDs = Dictionary(strings.enumerated().map { ($1, UInt32($0)) }, uniquingKeysWith: { a, _ in a })
    }
}
