import Foundation
import PushspoolCore

/// What `status --json` and `GET /v1/jobs/{id}` say about a job, from the spool alone: where its
/// file is, what an operator asked of it, whether a dispatcher holds it, its progress, and for an
/// ended job its summary. Reads a few small files, never a whole result log.
public struct JobStatus: Sendable {
    public let spool: Spool
    let controls: JobControls
    let owners: DispatcherRecordFolder
    let dispatchers: DispatcherRecordFolder
    /// The app of a send job that names none (`default_app`).
    let defaultApp: String
    /// "Now" for a job's heartbeat and `not_before`, when the caller names none: its `wall`
    /// time, which `run` stamps its records with (`status` and `serve` pass the system's).
    let clock: EngineClock

    public init(spool: Spool, defaultApp: String = AppConfig.implicitID, clock: EngineClock = .system) {
        self.spool = spool
        self.defaultApp = defaultApp
        self.clock = clock
        controls = JobControls(directory: spool.url(.control), clock: clock)
        owners = JobOwners.folder(spool)
        dispatchers = DispatcherRecordFolder(directory: DispatcherPresence.directory(spool))
    }

    /// The `status --json` entry of the job file `name` in `active/`.
    public func active(name: String, now: Date? = nil) -> JSONValue {
        let now = now ?? clock.wall()
        // A live dispatcher holds the job file's lock; a free one waits for the next run.
        // Asked first: whatever is read next, this must describe now.
        // Only asked, never taken: a status that locked the file, even for a moment, could make
        // a dispatcher's orphan scan find the job busy and pass it by.
        let running = JobFile.isHeld(spool.url(.active, name).path)
        let job = JobFile.peek(spool.url(.active, name).path).flatMap { try? JobParser.parse($0, fileName: name) }
        let id = job?.id ?? JobRunner.fallbackID(for: name)
        // The checkpoint a sending job keeps (a few bytes); else the result log, when small
        // enough to read at once; a million-line log is not read for a status line.
        var progress = ProgressCheckpoint.read(ProgressCheckpoint.url(in: spool, jobID: id))
        if progress == nil, let size = try? FileManager.default.attributesOfItem(atPath: spool.resultURL(jobID: id).path)[.size] as? Int,
           size <= 4 << 20, let log = ResultLogContents.read(spool.resultURL(jobID: id)) {
            progress = ProgressCheckpoint(targets: log.targets, finished: log.finished.count, delivered: log.delivered,
                                          failed: log.failed, unregistered: log.unregistered, capped: log.capped, updatedAt: now)
        }
        // What an operator asked of it, and whether a dispatcher has acted on it yet.
        var state = JobState(request: controls.request(for: id), running: running)
        // A held lock says the owner's process exists, not that it works (SIGSTOP, a stall):
        // its dispatcher's heartbeat says that (`JobOwners` names the dispatcher). A stalled job shows
        // no rate, whatever its last checkpoint said.
        let stalled = running && owners.read(name).flatMap { dispatchers.read("\($0.instance).json") }
            .map { now.timeIntervalSince($0.heartbeat) >= DispatcherPresence.respondingWithin } == true
        if stalled { state = .notResponding }
        // A `local_time` job between waves: when its next wave goes, to how many devices.
        let nextWave = NextWave.read(NextWave.url(in: spool, jobID: id))
        if nextWave != nil, state == .waitingToResume { state = .waitingForWave }
        let rate = running && !stalled ? progress?.rate : nil
        let eta = progress.flatMap { RateEstimator.secondsLeft(targets: $0.targets, finished: $0.finished, rate: rate) }
            .map { Int($0.rounded(.up)) }
        let fields: [(String, JSONValue)] = [
            ("id", .string(id)), ("file", .string(name)), ("running", .bool(running)), ("state", .string(state.rawValue)),
            ("rate_per_s", rate.map { .int(Int64($0.rounded())) } ?? .null),
            ("eta_s", eta.map { .int(Int64($0)) } ?? .null),
            // The job's own pacing when no checkpoint says it (paused before its first one).
            ("spread_over_seconds", (progress?.spreadOverSeconds ?? Self.pacing(job)).map { .int(Int64($0)) } ?? .null),
            ("finished", progress.map { .int(Int64($0.finished)) } ?? .null),
            ("targets", progress?.targets.map { .int(Int64($0)) } ?? .null),
            ("delivered", progress.map { .int(Int64($0.delivered)) } ?? .null),
            ("failed", progress.map { .int(Int64($0.failed)) } ?? .null),
        ] + Self.cappedField(progress) + [
            // Whose devices a send job goes to (`app`): ids, or "*" for every app.
            ("apps", Self.apps(job, defaultApp: defaultApp).map { .array($0.map(JSONValue.string)) } ?? .null),
        ]
        let wave: [(String, JSONValue)] = nextWave.map { [("next_wave", $0.json)] } ?? []
        return .object(fields + wave)
    }

    /// `capped` when a frequency cap held devices back (absent otherwise, as in the summary).
    static func cappedField(_ progress: ProgressCheckpoint?) -> [(String, JSONValue)] {
        guard let capped = progress?.capped, capped > 0 else { return [] }
        return [("capped", .int(Int64(capped)))]
    }

    /// A send job's apps as it names them (`["*"]`: every app); nil for other kinds.
    package static func apps(_ job: Job?, defaultApp: String) -> [String]? {
        guard case .send(let send)? = job?.kind else { return nil }
        switch send.apps {
        case .defaultApp: return [defaultApp]
        case .apps(let ids): return ids
        case .all: return ["*"]
        }
    }

    /// The job with this id, in whatever state: running or claimed (`active/`, the entry above),
    /// waiting (`incoming/`), or ended (its result log's summary). nil: no such job here.
    /// A job is found by its file name `<id>.json` (as `submit` and `serve` name them) or, once
    /// it has started, through its result log, which names its file.
    public func lookup(id: String, now: Date? = nil) -> JSONValue? {
        let now = now ?? clock.wall()
        let named = "\(id).json"
        if FileManager.default.fileExists(atPath: spool.url(.active, named).path), Self.jobID(spool, .active, named) == id {
            return active(name: named, now: now)
        }
        if FileManager.default.fileExists(atPath: spool.url(.incoming, named).path), Self.jobID(spool, .incoming, named) == id {
            return waiting(id: id, name: named, now: now)
        }
        let log = spool.resultURL(jobID: id)
        if let summary = ResultLogTail.summary(log) {
            return .object([("id", .string(id)), ("running", false), ("state", .string(JobState(summary.status).rawValue))] + summary.fields)
        }
        // Started under another file name: the log's job line names the file.
        if let file = ResultLogTail.jobFile(log), FileManager.default.fileExists(atPath: spool.url(.active, file).path) {
            return active(name: file, now: now)
        }
        return nil
    }

    private func waiting(id: String, name: String, now: Date) -> JSONValue {
        let job = JobFile.peek(spool.url(.incoming, name).path).flatMap { try? JobParser.parse($0, fileName: name) }
        return waiting(id: id, name: name, notBefore: Self.notBefore(job), now: now)
    }

    /// A send job's `spread_over_seconds`.
    static func pacing(_ job: Job?) -> Int? {
        if case .send(let send)? = job?.kind { return send.spreadOverSeconds }
        return nil
    }

    /// The id a job's result log is named after (its `id`, else its file name).

    public static func jobID(_ spool: Spool, _ folder: Spool.Folder, _ name: String) -> String {
        JobFile.peek(spool.url(folder, name).path).flatMap { try? JobParser.parse($0, fileName: name).id }
            ?? JobRunner.fallbackID(for: name)
    }
}
