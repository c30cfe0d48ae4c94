import Foundation
import PushspoolCore
import Synchronization

/// Every job of a spool, newest first, for the dashboard's campaign list: filtered by state, app
/// and text, then paged, so that a spool of 100,000 jobs answers a page without reading 100,000
/// files. What a page shows of each job is `JobStatus.lookup` (the entry of `status --json` and
/// `GET /v1/jobs/{id}`), computed for that page's jobs only.
///
/// What is kept between requests: each job file's name, folder, time and what its file says
/// (apps, platforms, a title and text to search; never a secure job's text), read once when the
/// name first shows up; and an ended job's final state, read once from its log's last line. The
/// folders are listed again at most once a second (names only: a listing of 100,000 names takes
/// a few tens of milliseconds).
public final class CampaignIndex: Sendable {
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
        /// Lowercased id, title and message (not a secure job's): what the text filter searches.
        var haystack: String
        /// done / cancelled / failed, once known (only for ended jobs).
        var ended: String?
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
        var entries: [String: Entry] = [:]   // key: folder/name
        var listedAt: Double = -1
        var ordered: [String] = []
    }

    let spool: Spool
    let defaultApp: String
    private let state = Mutex(State())

    public init(spool: Spool, defaultApp: String) {
        self.spool = spool
        self.defaultApp = defaultApp
    }

    /// The jobs that pass `filter`, newest first, `perPage` of them from `page` (1-based). `live`
    /// gives the state of a job that has not ended (from `JobStatus`), asked only when filtering
    /// by state.
    public func page(_ filter: Filter, page: Int, perPage: Int, live: (Entry) -> String?) -> Page {
        let all = snapshot(now: Date().timeIntervalSince1970)
        let text = filter.text?.lowercased().trimmingCharacters(in: .whitespaces)
        var matched: [Entry] = []
        for var e in all {
            if let app = filter.app, !app.isEmpty, !e.apps.contains(app) && !e.apps.contains("*") { continue }
            if let text, !text.isEmpty, !e.haystack.contains(text) { continue }
            if !filter.states.isEmpty {
                if e.folder == .done || e.folder == .failed {
                    if e.ended == nil {
                        e.ended = endedState(e)
                        remember(e)
                    }
                    guard let s = e.ended, filter.states.contains(s) else { continue }
                } else {
                    guard let s = live(e), filter.states.contains(s) else { continue }
                }
            }
            matched.append(e)
        }
        let start = max(0, (page - 1) * perPage)
        return Page(total: matched.count, entries: start < matched.count ? Array(matched[start..<min(matched.count, start + perPage)]) : [])
    }

    /// An ended job's final state, from its log's last line (its folder when the log is gone).
    func endedState(_ e: Entry) -> String {
        if let s = ResultLogTail.summary(spool.resultURL(jobID: e.id)) { return JobState(s.status).rawValue }
        return e.folder == .failed ? JobState.failed.rawValue : JobState.done.rawValue
    }

    private func remember(_ e: Entry) {
        state.withLock { $0.entries["\(e.folder.rawValue)/\(e.name)"] = e }
    }

    /// Every job, newest first: the folders listed again when the last listing is a second old.
    func snapshot(now: Double) -> [Entry] {
        let (fresh, known) = state.withLock { s in (now - s.listedAt < 1 && now >= s.listedAt, s.entries) }
        if fresh { return state.withLock { s in s.ordered.compactMap { s.entries[$0] } } }
        var entries: [String: Entry] = [:]
        entries.reserveCapacity(known.count + 64)
        for folder in [Spool.Folder.incoming, .active, .done, .failed] {
            let dir = spool.url(folder).path
            for name in (SpoolName.list(dir) ?? []).compactMap(\.text) where Spool.isJobName(name) {
                let key = "\(folder.rawValue)/\(name)"
                if let e = known[key] {
                    entries[key] = e
                } else if let e = read(folder, name) {
                    entries[key] = e
                }
            }
        }
        let ordered = entries.sorted { $0.value.modified != $1.value.modified ? $0.value.modified > $1.value.modified : $0.key < $1.key }.map(\.key)
        state.withLock { s in
            s.entries = entries
            s.ordered = ordered
            s.listedAt = now
        }
        return ordered.compactMap { entries[$0] }
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
        var entry = Entry(id: id, name: name, folder: folder, modified: modified, kind: "invalid", apps: [], platforms: [],
                          headline: nil, secure: false, haystack: id.lowercased(), ended: nil)
        switch job?.kind {
        case .send(let send)?:
            entry.kind = "send"
            entry.apps = JobStatus.apps(job, defaultApp: defaultApp) ?? []
            entry.platforms = send.platforms.map(\.rawValue)
            entry.secure = send.secure
            if !send.secure {
                let text = send.message.title ?? send.message.text
                entry.headline = text.count > 120 ? String(text.prefix(120)) + "…" : text
                // Bounded: 100,000 jobs' search text stays a few tens of megabytes.
                entry.haystack += "\n" + (send.message.title ?? "").prefix(100).lowercased() + "\n" + send.message.text.prefix(200).lowercased()
            }
        case .register?: entry.kind = "register"
        case .unregister?: entry.kind = "unregister"
        case nil: break
        }
        return entry
    }
}
