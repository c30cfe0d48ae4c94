import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every job of a spool, newest first, for the dashboard's campaign list: filtered by state, app
/// and text, then paged, so that a spool of 100,000 jobs answers a page without reading 100,000
/// files. What a page shows of each job is `JobStatus.lookup` (the entry of `status --json` and
/// `GET /v1/jobs/{id}`), computed for that page's jobs only.
///
/// What is kept between requests, per job file (`CampaignRecords`: 40 bytes and its text once):
/// its name, folder and time, and what its file says (apps, platforms, a headline, `not_before`;
/// never a secure job's text), read once when the name first shows up; an ended job's final state, read
/// once from its log's last line. A folder is listed again only when its own modification time
/// changed (a job came, went or moved), and at most once a second; only the jobs new to it are
/// read. A page is the only thing made per request: a filter walks the records, and text is
/// searched in their bytes. The records are saved in the spool's state folder now and then, so
/// that `serve` started again reads back what it knew instead of every job file.
public final class CampaignIndex: Sendable {
    /// A job as a page shows it.
    public struct Entry: Sendable {
        public var id: String
        public var name: String
        public var folder: Spool.Folder
        /// The job file's modification time (seconds since 1970): when it was submitted or last moved.
        public var modified: Double
        public var kind: String
        public var apps: [String]
        public var platforms: [String]
        /// The title, or else the start of the message; nil for a secure job (its text is never shown).
        public var headline: String?
        public var secure: Bool
        /// A send job's `not_before`, as its file said when it was read.
        public var notBefore: Date?
    }

    /// One page of the list.
    public struct Page: Sendable {
        public var total: Int
        public var entries: [Entry]
    }

    public struct Filter: Sendable {
        public var states: Set<String> = []
        public var app: String?
        public var text: String?
        public init() {}
    }

    private struct State {
        /// Each folder as it was when listed last.
        var versions: [Spool.Folder: FileIO.Version] = [:]
        var listedAt: Double = -1
        var records = CampaignRecords()
        /// Whether the saved list was looked for (once, at the first listing).
        var loaded = false
        /// Job files read and ended states learned since the list was last saved, and when that was.
        var unsaved = 0
        var savedAt: Double = 0
    }

    static let folders: [Spool.Folder] = [.incoming, .active, .done, .failed]
    static let headlineLength = 80

    let spool: Spool
    let defaultApp: String
    private let state = Mutex(State())
    /// One listing at a time.
    private let listing = Mutex(())

    /// Its `wall` time: when the records are due to be saved again.
    private let clock: EngineClock

    public init(spool: Spool, defaultApp: String, clock: EngineClock = .system) {
        self.clock = clock
        self.spool = spool
        self.defaultApp = defaultApp
    }

    /// The jobs that pass `filter`, newest first, `perPage` of them from `page` (1-based). `live`
    /// gives the state of a job that has not ended (from `JobStatus`), asked only when filtering
    /// by state.
    public func page(_ filter: Filter, page: Int, perPage: Int, live: (Entry) -> String?) -> Page {
        let all = snapshot(now: clock.wall().timeIntervalSince1970)
        let start = max(0, (page - 1) * perPage)
        let query = Array((filter.text ?? "").trimmingCharacters(in: .whitespaces).lowercased().utf8)
        let ascii = query.allSatisfy { $0 < 0x80 }
        // The app filter as the interned lists that pass it: one look-up per list, not per job.
        var appPasses: [UInt32: Bool] = [:]
        let app = filter.app ?? ""
        var total = 0
        var entries: [Entry] = []
        var learned: [(index: Int, state: UInt8)] = []
        // A job in done/ or failed/ has ended and one elsewhere has not: a filter of ended states
        // only never asks a waiting or running job, and one of live states never reads a log.
        let endedStates: Set<String> = [JobState.done.rawValue, JobState.cancelled.rawValue, JobState.failed.rawValue]
        let wantsEnded = !filter.states.isDisjoint(with: endedStates), wantsLive = !filter.states.isSubset(of: endedStates)
        for (i, r) in all.records.enumerated() {
            if !app.isEmpty {
                let passes = appPasses[r.apps] ?? {
                    let list = all.string(r.apps)
                    let p = list == "*" || list.split(separator: ",").contains { $0 == app }
                    appPasses[r.apps] = p
                    return p
                }()
                if !passes { continue }
            }
            if !query.isEmpty, !all.contains(r, lowercased: query, ascii: ascii) { continue }
            if !filter.states.isEmpty {
                let folder = Self.folders[Int(r.folder)]
                if folder == .done || folder == .failed {
                    guard wantsEnded else { continue }
                    var ended = r.ended
                    if ended == 0 {
                        ended = UInt8(CampaignRecords.states.firstIndex(of: endedState(id: all.id(r), folder: folder))! + 1)
                        learned.append((i, ended))
                    }
                    guard filter.states.contains(CampaignRecords.states[Int(ended) - 1].rawValue) else { continue }
                } else {
                    guard wantsLive, let s = live(entry(r, all)), filter.states.contains(s) else { continue }
                }
            }
            if total >= start && entries.count < perPage { entries.append(entry(r, all)) }
            total += 1
        }
        if !learned.isEmpty {
            let save = state.withLock { s in
                s.records.learn(learned, generation: all.generation)
                s.unsaved += learned.count
                return due(&s, now: clock.wall().timeIntervalSince1970) ? s.records : nil
            }
            if let save { listing.withLock { _ in self.save(save) } }
        }
        // Thousands of logs' last lines read once: their buffers given back.
        if learned.count > 1000 { FileIO.trimHeap() }
        return Page(total: total, entries: entries)
    }

    private func entry(_ r: CampaignRecords.Record, _ all: CampaignRecords) -> Entry {
        func list(_ i: UInt32) -> [String] { all.string(i).isEmpty ? [] : all.string(i).split(separator: ",").map(String.init) }
        return Entry(id: all.id(r), name: all.name(r), folder: Self.folders[Int(r.folder)], modified: r.modified, kind: all.kind(r),
                     apps: list(r.apps), platforms: list(r.platforms), headline: all.headline(r), secure: r.secure,
                     notBefore: all.notBefore(r))
    }

    /// An ended job's final state, from its log's last line (its folder when the log is gone).
    func endedState(id: String, folder: Spool.Folder) -> JobState {
        if let s = ResultLogTail.summary(spool.resultURL(jobID: id)) { return JobState(s.status) }
        return folder == .failed ? .failed : .done
    }

    /// Every job, newest first: a folder listed again when it changed (at most once a second).
    func snapshot(now: Double) -> CampaignRecords {
        if let fresh = state.withLock({ s in now - s.listedAt < 1 && now >= s.listedAt ? s.records : nil }) { return fresh }
        return listing.withLock { _ in
            if let fresh = state.withLock({ s in now - s.listedAt < 1 && now >= s.listedAt ? s.records : nil }) { return fresh }
            var versions: [Spool.Folder: FileIO.Version] = [:], records = CampaignRecords(), loaded = true
            state.withLock { s in
                // Held here alone while it changes: changed in place, not copied.
                swap(&records, &s.records)
                (versions, loaded, s.loaded) = (s.versions, s.loaded, true)
            }
            // Started again: the list as it was saved, its records kept for the files still there.
            if !loaded, records.records.isEmpty, let known = loadSaved() {
                records = known
                state.withLock { $0.savedAt = now }
            }
            var read = 0
            var relisted: Set<UInt8> = [], listed: [CampaignRecords.Record] = []
            for (f, folder) in Self.folders.enumerated() {
                let dir = spool.url(folder).path
                let version = FileIO.version(dir)
                // Unchanged since it was listed (and not changed in the last two seconds, in case
                // the file system's clock is coarse): its names are the same.
                if let version, versions[folder] == version, now - version.modified > 2 { continue }
                read += relist(folder, index: UInt8(f), dir: dir, records: &records, into: &listed)
                relisted.insert(UInt8(f))
                versions[folder] = version
            }
            // One sort for every folder listed again.
            if !relisted.isEmpty { records.replace(folders: relisted, with: listed) }
            let save = state.withLock { s in
                // Ended states learned meanwhile were learned of the list taken here: lost, read again.
                s.versions = versions
                s.records = records
                s.listedAt = now
                s.unsaved += read
                return due(&s, now: now)
            }
            if save { self.save(records) }
            // Thousands of job files parsed once leave their garbage in malloc's arenas: given back.
            if read > 1000 { FileIO.trimHeap() }
            return records
        }
    }

    // MARK: The saved list

    /// Where the list is saved between runs of `serve`.
    var savedURL: URL { spool.stateDirectory.appendingPathComponent("campaign-index") }
    /// A saved list larger than this (some 300,000 jobs) is not read back: its files are.
    static let savedLimit = 32 << 20

    /// Whether the list is to be saved now: after a thousand changes, or a minute after the first
    /// one (a spool that changes a job at a time is not written out at every job).
    private func due(_ s: inout State, now: Double) -> Bool {
        guard s.unsaved >= 1000 || (s.unsaved > 0 && now - s.savedAt >= 60) else { return false }
        s.unsaved = 0
        s.savedAt = now
        return true
    }

    /// Written beside the spool's other state (a temporary file renamed into place; not synced:
    /// a list lost is read again from the files). Readable by its owner only: it holds headlines.
    private func save(_ records: CampaignRecords) {
        let temporary = spool.stateDirectory.appendingPathComponent(".campaign-index.\(getpid())").path
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        // Written a megabyte at a time: the list is not held twice.
        var written = true
        records.saved { chunk in written = written && (try? FileIO.writeAll(fd, chunk)) != nil }
        close(fd)
        if !written || rename(temporary, savedURL.path) != 0 { unlink(temporary) }
    }

    /// The saved list, read at its size (not grown by doubling: `serve` holds it once).
    private func loadSaved() -> CampaignRecords? {
        let fd = open(savedURL.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size > 0, st.st_size <= Self.savedLimit else { return nil }
        let size = Int(st.st_size)
        var complete = false
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var done = 0
            while done < size {
                let n = pread(fd, buffer.baseAddress! + done, size - done, off_t(done))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                done += n
            }
            if done < size { buffer.baseAddress!.update(repeating: 0, count: size) }
            complete = done == size
            count = size
        }
        return complete ? CampaignRecords(saved: bytes) : nil
    }

    /// Folder `folder`'s job files as they are now, added to `listed`: the ones `records` knows
    /// kept, the new ones read. The directory is read entry by entry (no list of its names is
    /// made). How many were read.
    private func relist(_ folder: Spool.Folder, index f: UInt8, dir: String, records: inout CampaignRecords,
                        into listed: inout [CampaignRecords.Record]) -> Int {
        var known: [UInt64: Int] = [:]
        known.reserveCapacity(records.records.count(where: { $0.folder == f }))
        for (i, r) in records.records.enumerated() where r.folder == f { known[records.nameHash(r) ^ r.ino] = i }
        var read = 0
        guard let handle = opendir(dir) else { return 0 }
        defer { closedir(handle) }
        while let entry = readdir(handle) {
            let bytes = withUnsafeBytes(of: &entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            let name = SpoolName(bytes)
            guard name.looksLikeJob else { continue }
            let ino = UInt64(entry.pointee.d_ino)
            if let i = known[CampaignRecords.nameHash(of: bytes) ^ ino], records.records[i].ino == ino, records.hasName(records.records[i], bytes) {
                listed.append(records.records[i])
            } else if let text = name.text, let fields = self.read(folder, index: f, text, ino: ino) {
                listed.append(records.make(fields))
                read += 1
            }
        }
        return read
    }

    /// The job file of job `id`, wherever it is: named `<id>.json` (as `submit` and `serve` name
    /// them), else the file its result log's first line names.
    public func job(id: String) -> Job? {
        for folder in [Spool.Folder.active, .incoming, .done, .failed] {
            if let bytes = JobFile.peek(spool.url(folder, "\(id).json").path), let job = try? JobParser.parse(bytes, fileName: "\(id).json") {
                return job
            }
        }
        guard let file = ResultLogTail.jobFile(spool.resultURL(jobID: id)) else { return nil }
        for folder in [Spool.Folder.active, .done, .failed] {
            if let bytes = JobFile.peek(spool.url(folder, file).path), let job = try? JobParser.parse(bytes, fileName: file), job.id == id {
                return job
            }
        }
        return nil
    }

    /// What the job file says, read once.
    private func read(_ folder: Spool.Folder, index: UInt8, _ name: String, ino: UInt64) -> CampaignRecords.Fields? {
        let path = spool.url(folder, name).path
        guard let modified = FileIO.modificationTime(path) else { return nil }   // moved meanwhile: the next listing has it
        let job = JobFile.peek(path).flatMap { try? JobParser.parse($0, fileName: name) }
        var fields = CampaignRecords.Fields(id: job?.id ?? JobRunner.fallbackID(for: name), name: name, folder: index, modified: modified,
                                            kind: 0, apps: "", platforms: "", headline: nil, secure: false, notBefore: JobStatus.notBefore(job), ino: ino)
        switch job?.kind {
        case .send(let send)?:
            fields.kind = 1
            fields.apps = (JobStatus.apps(job, defaultApp: defaultApp) ?? []).joined(separator: ",")
            fields.platforms = send.platforms.map(\.rawValue).joined(separator: ",")
            fields.secure = send.secure
            if !send.secure {
                let text = send.message.title ?? send.message.text
                fields.headline = text.count > Self.headlineLength ? String(text.prefix(Self.headlineLength)) + "…" : text
            }
        case .register?: fields.kind = 2
        case .unregister?: fields.kind = 3
        case nil: break
        }
        return fields
    }
}
