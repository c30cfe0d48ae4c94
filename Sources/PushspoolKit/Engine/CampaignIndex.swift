import Foundation
import PushspoolCore
import Synchronization

/// Every job of a spool, newest first, for the dashboard's campaign list: filtered by state, app
/// and text, then paged, so that a spool of 100,000 jobs answers a page without reading 100,000
/// files. What a page shows of each job is `JobStatus.lookup` (the entry of `status --json` and
/// `GET /v1/jobs/{id}`), computed for that page's jobs only.
///
/// What is kept between requests, per job file: its name, folder and time, and what its file
/// says (apps, platforms, a headline; never a secure job's text), read once when the name first
/// shows up; an ended job's final state, read once from its log's last line. A folder is listed
/// again only when its own modification time changed (a job came, went or moved), and at most
/// once a second. Kept small: 100,000 jobs take a few tens of megabytes.
public final class CampaignIndex: Sendable {
    public struct Entry: Sendable {
        public var id: String
        public var name: String
        public var folder: Spool.Folder
        /// The job file's modification time (seconds since 1970): when it was submitted or last moved.
        public var modified: Double
        public var kind: String
        /// The apps it names, comma-separated (`*`: every app).
        var appList: String
        var platformList: String
        /// The title, or else the start of the message; nil for a secure job (its text is never shown).
        public var headline: String?
        public var secure: Bool
        /// done / cancelled / failed, once known (only for ended jobs).
        var ended: String?

        public var apps: [String] { appList.isEmpty ? [] : appList.split(separator: ",").map(String.init) }
        public var platforms: [String] { platformList.isEmpty ? [] : platformList.split(separator: ",").map(String.init) }
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
        var isEmpty: Bool { states.isEmpty && (app ?? "").isEmpty && (text ?? "").trimmingCharacters(in: .whitespaces).isEmpty }
    }

    private struct State {
        /// Each folder as it was when listed last.
        var versions: [Spool.Folder: FileIO.Version] = [:]
        var listedAt: Double = -1
        /// Every entry, newest first (rebuilt only when a folder changed): the only copy kept.
        var ordered: [Entry] = []
    }

    static let folders: [Spool.Folder] = [.incoming, .active, .done, .failed]
    static let headlineLength = 80

    let spool: Spool
    let defaultApp: String
    private let state = Mutex(State())
    /// One listing at a time.
    private let listing = Mutex(())

    public init(spool: Spool, defaultApp: String) {
        self.spool = spool
        self.defaultApp = defaultApp
    }

    /// The jobs that pass `filter`, newest first, `perPage` of them from `page` (1-based). `live`
    /// gives the state of a job that has not ended (from `JobStatus`), asked only when filtering
    /// by state.
    public func page(_ filter: Filter, page: Int, perPage: Int, live: (Entry) -> String?) -> Page {
        let all = snapshot(now: Date().timeIntervalSince1970)
        let start = max(0, (page - 1) * perPage)
        if filter.isEmpty {
            return Page(total: all.count, entries: start < all.count ? Array(all[start..<min(all.count, start + perPage)]) : [])
        }
        let text = filter.text?.lowercased().trimmingCharacters(in: .whitespaces) ?? ""
        let app = filter.app ?? ""
        var total = 0
        var entries: [Entry] = []
        var learned: [Entry] = []
        for var e in all {
            if !app.isEmpty, !e.apps.contains(app) && e.appList != "*" { continue }
            if !text.isEmpty, !e.id.lowercased().contains(text), !(e.headline?.lowercased().contains(text) ?? false) { continue }
            if !filter.states.isEmpty {
                if e.folder == .done || e.folder == .failed {
                    if e.ended == nil {
                        e.ended = endedState(e)
                        learned.append(e)
                    }
                    guard let s = e.ended, filter.states.contains(s) else { continue }
                } else {
                    guard let s = live(e), filter.states.contains(s) else { continue }
                }
            }
            if total >= start && entries.count < perPage { entries.append(e) }
            total += 1
        }
        if !learned.isEmpty { remember(learned) }
        // Thousands of logs' last lines read once: their buffers given back.
        if learned.count > 1000 { FileIO.trimHeap() }
        return Page(total: total, entries: entries)
    }

    /// An ended job's final state, from its log's last line (its folder when the log is gone).
    func endedState(_ e: Entry) -> String {
        if let s = ResultLogTail.summary(spool.resultURL(jobID: e.id)) { return JobState(s.status).rawValue }
        return e.folder == .failed ? JobState.failed.rawValue : JobState.done.rawValue
    }

    private func remember(_ learned: [Entry]) {
        let ended = Dictionary(learned.map { ("\($0.folder.rawValue)/\($0.name)", $0.ended) }, uniquingKeysWith: { a, _ in a })
        state.withLock { s in
            for i in s.ordered.indices where s.ordered[i].ended == nil && s.ordered[i].folder != .incoming && s.ordered[i].folder != .active {
                if let e = ended["\(s.ordered[i].folder.rawValue)/\(s.ordered[i].name)"] { s.ordered[i].ended = e }
            }
        }
    }

    /// Every job, newest first: a folder listed again when it changed (at most once a second).
    func snapshot(now: Double) -> [Entry] {
        if let fresh = state.withLock({ s in now - s.listedAt < 1 && now >= s.listedAt ? s.ordered : nil }) { return fresh }
        return listing.withLock { _ in
            if let fresh = state.withLock({ s in now - s.listedAt < 1 && now >= s.listedAt ? s.ordered : nil }) { return fresh }
            let (versions, previous) = state.withLock { ($0.versions, $0.ordered) }
            var newVersions = versions
            var relisted: [Spool.Folder: [Entry]] = [:]
            var readMany = false
            for folder in Self.folders {
                let dir = spool.url(folder).path
                let version = FileIO.version(dir)
                // Unchanged since it was listed (and not changed in the last two seconds, in case
                // the file system's clock is coarse): its names are the same.
                if let version, versions[folder] == version, now - version.modified > 2 { continue }
                var known: [String: Entry] = [:]
                for e in previous where e.folder == folder { known[e.name] = e }
                var entries: [Entry] = []
                var read = 0
                for name in (SpoolName.list(dir) ?? []).compactMap(\.text) where Spool.isJobName(name) {
                    if let e = known[name] {
                        entries.append(e)
                    } else if let e = self.read(folder, name) {
                        entries.append(e)
                        read += 1
                    }
                }
                readMany = readMany || read > 1000
                relisted[folder] = entries
                newVersions[folder] = version
            }
            var ordered = previous
            if !relisted.isEmpty {
                ordered = previous.filter { relisted[$0.folder] == nil }
                for entries in relisted.values { ordered.append(contentsOf: entries) }
                ordered.sort { $0.modified != $1.modified ? $0.modified > $1.modified : $0.name > $1.name }
            }
            state.withLock { s in
                s.versions = newVersions
                s.ordered = ordered
                s.listedAt = now
            }
            // Thousands of job files parsed once leave their garbage in malloc's arenas: given back.
            if readMany { FileIO.trimHeap() }
            return ordered
        }
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
    private func read(_ folder: Spool.Folder, _ name: String) -> Entry? {
        let path = spool.url(folder, name).path
        guard let modified = FileIO.modificationTime(path) else { return nil }   // moved meanwhile: the next listing has it
        let job = JobFile.peek(path).flatMap { try? JobParser.parse($0, fileName: name) }
        let id = job?.id ?? JobRunner.fallbackID(for: name)
        var entry = Entry(id: id, name: name, folder: folder, modified: modified, kind: "invalid", appList: "", platformList: "",
                          headline: nil, secure: false, ended: nil)
        switch job?.kind {
        case .send(let send)?:
            entry.kind = "send"
            entry.appList = (JobStatus.apps(job, defaultApp: defaultApp) ?? []).joined(separator: ",")
            entry.platformList = send.platforms.map(\.rawValue).joined(separator: ",")
            entry.secure = send.secure
            if !send.secure {
                let text = send.message.title ?? send.message.text
                entry.headline = text.count > Self.headlineLength ? String(text.prefix(Self.headlineLength)) + "…" : text
            }
        case .register?: entry.kind = "register"
        case .unregister?: entry.kind = "unregister"
        case nil: break
        }
        return entry
    }
}
