import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One pass over a spool folder in constant memory, however many files wait there: how many jobs
/// it holds and since when, the oldest few (a bounded batch to claim, oldest first), the would-be
/// jobs with unsafe names, and the files that are not jobs at all.
///
/// A flood of 1,000,000 job files must not cost a dispatcher (or `status`) memory in proportion:
/// names are read with `readdir` and dated with `fstatat` on the open folder, and only the
/// `limit` oldest are kept (a max-heap of the youngest kept one on top), so a scan costs
/// O(n log limit) time and O(limit) memory.
package struct FolderScan {
    package struct Entry {
        package let name: String
        let version: FileIO.Version
    }

    /// Job files (`*.json`, not starting with `.`, safe names) in the folder.
    package private(set) var jobs = 0
    /// The oldest job's modification time, over every job (not only the batch).
    package private(set) var oldestModified: Double?
    /// The `limit` oldest jobs not skipped, oldest first (by modification time, then name); with
    /// `newest: true` the `limit` newest, newest first.
    package private(set) var oldest: [Entry] = []
    /// Would-be jobs whose names are not valid UTF-8 or hold control characters (at most `limit`).
    private(set) var unsafe: [SpoolName] = []
    /// Visible files that are not jobs (`Welcome.JSON`, `notes.txt`): how many, and the first names.
    package private(set) var strays = 0
    private(set) var strayNames: [String] = []

    static let strayNamesKept = 16

    /// nil: not listed at all (starts with `.`); true: a job name of printable ASCII; false:
    /// anything else, looked at closely.
    private static func isPlainJobName(_ raw: UnsafeRawBufferPointer) -> Bool? {
        guard let first = raw.first, first != 0, first != UInt8(ascii: ".") else { return nil }
        var n = 0
        while n < raw.count, raw[n] != 0 {
            guard raw[n] >= 0x20, raw[n] < 0x7F else { return false }
            n += 1
        }
        guard n > 5 else { return false }
        return raw[n - 5] == UInt8(ascii: ".") && raw[n - 4] == UInt8(ascii: "j") && raw[n - 3] == UInt8(ascii: "s")
            && raw[n - 2] == UInt8(ascii: "o") && raw[n - 1] == UInt8(ascii: "n")
    }

    private static func monotonic() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    private static func version(_ st: stat) -> FileIO.Version {
        #if canImport(Darwin)
        let t = st.st_mtimespec
        #else
        let t = st.st_mtim
        #endif
        return FileIO.Version(inode: UInt64(st.st_ino), size: Int64(st.st_size), modified: Double(t.tv_sec) + Double(t.tv_nsec) / 1e9)
    }

    /// False when `budget` ran out before the folder's end: `jobs` is then a lower bound.
    package private(set) var complete = true

    /// Jobs whose modification time was read: all of them unless `datedLimit` stopped it (then
    /// `oldestModified` is the oldest of a sample: the real oldest is at least that old).
    package private(set) var dated = 0

    /// Scans `directory`; nil when it cannot be read. `dated: false` only counts (no `fstatat`):
    /// `oldest` and `oldestModified` stay empty; `datedLimit` dates only that many jobs (in
    /// directory order). `skip` leaves a job out of the batch (a job known to be scheduled for
    /// later), not out of the count. `budget`: seconds after which the scan stops, `complete`
    /// false (a million names take over a second to list, whoever lists them).
    package init?(_ directory: String, limit: Int, dated: Bool = true, datedLimit: Int = .max, newest: Bool = false,
                  budget: Double? = nil, skip: (String, FileIO.Version) -> Bool = { _, _ in false }) {
        guard let dir = opendir(directory) else { return nil }
        defer { closedir(dir) }
        let fd = dirfd(dir)
        var heap = BoundedOldest(limit: limit, newest: newest)
        let deadline = budget.map { Self.monotonic() + $0 }
        var seen = 0
        while let entry = readdir(dir) {
            seen += 1
            if let deadline, seen % 4096 == 0, Self.monotonic() > deadline {
                complete = false
                break
            }
            // The common case costs no allocation: a printable ASCII `*.json` name is a job, and
            // only needs a String if it may enter the batch.
            let plain = withUnsafeBytes(of: &entry.pointee.d_name) { Self.isPlainJobName($0) }
            if plain == nil { continue }    // hidden, `.`, `..`
            if plain == true, !dated || self.dated >= datedLimit {
                jobs += 1
                continue
            }
            var st = stat()
            if plain == true {
                jobs += 1
                let ok = withUnsafeBytes(of: &entry.pointee.d_name) { raw in
                    fstatat(fd, raw.baseAddress!.assumingMemoryBound(to: CChar.self), &st, AT_SYMLINK_NOFOLLOW) == 0
                }
                guard ok else { continue }
                self.dated += 1
                let version = Self.version(st)
                oldestModified = min(oldestModified ?? version.modified, version.modified)
                guard heap.mayAccept(version.modified) else { continue }
                let text = withUnsafeBytes(of: &entry.pointee.d_name) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
                if !skip(text, version) { heap.offer(Entry(name: text, version: version)) }
                continue
            }
            // Anything else: not ASCII, control characters, or not a job name.
            let raw = withUnsafeBytes(of: &entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            let name = SpoolName(raw)
            guard let text = name.text else {
                if name.looksLikeJob, unsafe.count < max(limit, 64) { unsafe.append(name) }
                continue
            }
            guard Spool.isJobName(text) else {
                // Folders (a stray `mkdir`) are not news; files that look like jobs but are not are.
                if entry.pointee.d_type != UInt8(DT_DIR) {
                    strays += 1
                    if strayNames.count < Self.strayNamesKept { strayNames.append(text) }
                }
                continue
            }
            jobs += 1
            guard dated, self.dated < datedLimit,
                  fstatat(fd, raw.map { CChar(bitPattern: $0) } + [0], &st, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            self.dated += 1
            let version = Self.version(st)
            oldestModified = min(oldestModified ?? version.modified, version.modified)
            if !skip(text, version) { heap.offer(Entry(name: text, version: version)) }
        }
        oldest = heap.sorted()
        strayNames.sort()
    }
}

/// The `limit` smallest entries by (modification time, name) seen so far: a binary max-heap, so
/// each offer costs O(log limit) and memory stays bounded.
private struct BoundedOldest {
    let limit: Int
    /// Keeps the newest instead (the order reversed).
    let newest: Bool
    private var heap: BinaryHeap<FolderScan.Entry>

    init(limit: Int, newest: Bool) {
        self.limit = max(0, limit)
        self.newest = newest
        heap = BinaryHeap { Self.younger($0, $1, newest: newest) }
    }

    /// Whether `a` is further from the kept end than `b` (the heap's top is the first to go).
    private static func younger(_ a: FolderScan.Entry, _ b: FolderScan.Entry, newest: Bool) -> Bool {
        let later = a.version.modified != b.version.modified ? a.version.modified > b.version.modified : a.name > b.name
        return newest ? !later && (a.version.modified != b.version.modified || a.name != b.name) : later
    }

    /// Whether an entry modified at `modified` could enter (ties need the name to decide).
    func mayAccept(_ modified: Double) -> Bool {
        guard limit > 0 else { return false }
        guard heap.count == limit else { return true }
        let top = heap.top!.version.modified
        return newest ? modified >= top : modified <= top
    }

    mutating func offer(_ e: FolderScan.Entry) {
        guard limit > 0 else { return }
        if heap.count < limit {
            heap.push(e)
        } else if let top = heap.top, Self.younger(top, e, newest: newest) {
            heap.replaceTop(with: e)
        }
    }

    func sorted() -> [FolderScan.Entry] { heap.items.sorted { Self.younger($1, $0, newest: newest) } }
}
