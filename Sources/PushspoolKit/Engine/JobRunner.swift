import Foundation
import PushspoolCore
import Synchronization

/// Runs one claimed job (`active/<name>`) to its end: validate → result log → targets →
/// providers → outcomes → summary → `done/` (or `failed/`). Safe to run again on the same job
/// after a crash: targets the result log already records as final are not sent again.
final class JobRunner: Sendable {
    struct Environment: Sendable {
        var spool: Spool
        var registry: any RegistryDatabase
        var pool: WorkerPool
        /// Provider state per platform, from config `routes`.
        var routes: [Platform: ProviderState]
        var log: Log
        var isStopping: @Sendable () -> Bool
        /// Operators' cancel and pause requests (`control/`).
        var controls: JobControls? = nil
        /// Running jobs' progress, for the progress lines and metrics.
        var activity: Activity? = nil
        var metrics: Metrics? = nil
        /// How long a job stays with a dispatcher on another host after its last heartbeat
        /// (`owner_lease_seconds`).
        var ownerLease: Double = JobOwners.defaultLease
        /// Re-reads the running job's owner record (set per job by the runner; see `JobOwners.confirm`).
        var confirmOwnership: (@Sendable () -> Void)? = nil
    }

    /// Interruption reasons that are operators' requests, not failures.
    static let cancelled = "cancelled"
    static let paused = "paused"

    enum Origin { case incoming, orphan }

    let env: Environment
    /// Registration changes of hub-routed platforms also go to the hub.
    let installations: InstallationWriter
    /// Register and unregister jobs: the same registration path as the CLI and `serve`.
    let registrations: RegistrationService

    /// Who claims job ids in a shared registry: this host and spool.
    let claimOwner: String
    /// Which dispatcher runs each job in `active/`, for dispatchers on other hosts.
    let owners: JobOwners
    /// Job file names being run here, with their job ids: a second file with the id of a job
    /// running here waits for it to end (`.waiting`) instead of being left as another's.
    private let working = Mutex<[String: String]>([:])

    init(_ env: Environment) {
        self.env = env
        claimOwner = JobClaimOwner.current(spool: env.spool)
        owners = JobOwners(spool: env.spool, lease: env.ownerLease)
        installations = InstallationWriter(routes: env.routes, pool: env.pool, isStopping: env.isStopping)
        registrations = RegistrationService(registry: env.registry, hub: installations)
    }

    func run(_ name: String, origin: Origin) -> JobReport {
        let spool = env.spool
        let started = Date()
        let fallbackID = Self.fallbackID(for: name)
        let activePath = spool.url(.active, name).path
        let file: JobFile
        do {
            file = try JobFile(path: activePath)
        } catch .busy {
            return JobReport(id: fallbackID, file: name, outcome: .busy)
        } catch .gone {
            return JobReport(id: fallbackID, file: name, outcome: .skipped)
        } catch .notRegular(let what) {
            return quarantine(name, id: fallbackID, error: "the job file is \(what), not a regular file", pns: [], file: nil)
        } catch {
            return quarantine(name, id: fallbackID, error: "cannot open the job file: \(error)", pns: [], file: nil)
        }
        defer { file.release() }
        // Locked only after its owner finished and moved it on: nothing left to do here.
        guard file.isAt(activePath) else { return JobReport(id: fallbackID, file: name, outcome: .skipped) }
        // Across hosts (NFS) the lock may not show: the owner record says who runs the job.
        let ownership: JobOwners.Ownership
        switch owners.take(name, origin: origin) {
        case .success(let taken): ownership = taken
        case .failure: return JobReport(id: fallbackID, file: name, outcome: .busy)
        }
        defer { owners.release(ownership) }

        let bytes: [UInt8]
        do {
            bytes = try file.read()
        } catch {
            return quarantine(name, id: fallbackID, error: "cannot read the job file: \(error)", pns: [], file: file)
        }
        let job: Job
        do {
            job = try JobParser.parse(bytes, fileName: name)
        } catch {
            return quarantine(name, id: JobParser.declaredID(bytes) ?? fallbackID, error: error.description,
                              pns: Self.declaredPlatforms(bytes), file: file)
        }

        working.withLock { $0[name] = job.id }
        defer { working.withLock { $0[name] = nil } }
        let kind = switch job.kind { case .send: "send"; case .register: "register"; case .unregister: "unregister" }
        env.log.log(env.log.isStructured ? .info : .debug, "job started", [("job", job.id), ("file", name), ("kind", kind)])

        // A paused job stays where it is, untouched, until it is resumed (or cancelled).
        let request = env.controls?.request(for: job.id)
        if request == .pause { return JobReport(id: job.id, file: name, outcome: origin == .incoming ? .paused : .skipped) }

        // Replaced between the scan's look and the claim by a job that is not due yet (a new
        // `not_before`): it goes back to incoming/ to wait for its time, unsent.
        if origin == .incoming, request != .cancel, case .send(let send) = job.kind, let due = send.notBefore, due > Date() {
            _ = spool.move(name, from: .active, to: .incoming)
            return JobReport(id: job.id, file: name, outcome: .skipped)
        }

        // Prepare everything that can fail for the whole job before anything is sent.
        var plan = SendPlan()
        if case .send(let send) = job.kind {
            switch SendPlan.make(send, routes: env.routes) {
            case .success(let p): plan = p
            case .failure(let problem):
                return quarantine(name, id: job.id, error: problem.description, pns: send.platforms, file: file)
            }
        }

        // The result log's lock: two jobs with one id (different files, or spellings that differ
        // only by case) never run at once, and the second finds the first's summary.
        let logURL = spool.url(.results, "\(spool.adoptResultLogName(jobID: job.id)).jsonl")
        var resultLog: ResultLog
        do { resultLog = try lockLog(logURL, job: job, name: name) } catch { return error }
        // A send job that crashed left where to pick up (its progress checkpoint): then only the
        // log's tail is read, not every line it already holds.
        let checkpoint = ProgressCheckpoint.read(ProgressCheckpoint.url(in: env.spool, jobID: job.id))
        let resumeAt = checkpoint?.resume.flatMap { $0.registry == env.registry.location ? $0.point : nil }
        var existing = ResultLogContents.read(logURL, from: resumeAt)
        let isRegistryChange: Bool
        if case .send = job.kind { isRegistryChange = false } else { isRegistryChange = true }
        switch existing?.summaryStatus {
        case "done" where !isRegistryChange, "cancelled" where !isRegistryChange:
            try? resultLog.close()
            guard file.isAt(activePath) else { return JobReport(id: job.id, file: name, outcome: .skipped) }
            if origin == .orphan, existing?.file == name {
                spool.complete(name)     // this very file crashed after its summary, before the move
                return JobReport(id: job.id, file: name, outcome: .registry("already complete"))
            }
            let moved = spool.complete(name, as: "\(name.dropLast(5)).duplicate.json")
            return JobReport(id: job.id, file: moved ?? name, outcome: .duplicate)
        case .some:
            // An earlier run of this id ended: a failed (invalid) send job, or a registration
            // change re-dropped under the same name (upserts are idempotent, so it runs again).
            // Its log is kept under a name of its own and this run starts a new one.
            try? resultLog.close()
            guard spool.setAsideResultLog(of: job.id, as: existing?.summaryStatus == "done" ? "previous" : "failed") else {
                return JobReport(id: job.id, file: name, outcome: .interrupted("cannot set the earlier result log of \(job.id) aside"))
            }
            do { resultLog = try lockLog(logURL, job: job, name: name) } catch { return error }
            existing = nil
        case nil: break
        }
        let prior = existing ?? ResultLogContents()
        // A job line for this file means a dispatcher on this spool won the id's claim before it
        // wrote it: a resume goes on, even on another host sharing the spool (whose claim owner,
        // naming its host, differs).
        let resumingOwnClaim = origin == .orphan && prior.hasJobLine && prior.file == name
        if case .send = job.kind, !resumingOwnClaim, let early = claim(job, name: name, log: resultLog, logURL: logURL, file: file) {
            return early
        }

        let outcome: JobReport.Outcome
        switch job.kind {
        case .send(let send):
            var targets = prior.targets
            if !prior.hasJobLine {
                let count = plan.targetCount(send, registry: env.registry)
                targets = count
                resultLog.append(ResultLine.job(job, file: name, receivedAt: receivedAt(name), pns: send.platforms, targets: count))
            }
            let progress = ProgressCheckpoint.url(in: env.spool, jobID: job.id)
            // A job taken over by another host stops producing targets, as on a stop.
            var sendEnv = env
            sendEnv.isStopping = { [isStopping = env.isStopping] in isStopping() || ownership.isLost }
            sendEnv.confirmOwnership = { [owners] in owners.confirm(ownership) }
            let tally = request == .cancel
                ? SendRun.Result(delivered: prior.delivered, failed: prior.failed, unregistered: prior.unregistered,
                                 retries: prior.retries, interruption: Self.cancelled)
                : SendRun(env: sendEnv, job: job, send: send, plan: plan, log: resultLog, prior: prior,
                          progress: (progress, targets)).execute()
            try? FileManager.default.removeItem(at: progress)
            if let host = ownership.lostTo {
                outcome = .interrupted("taken over by a dispatcher on \(host) (this one's heartbeat came later than owner_lease_seconds)")
            } else if tally.interruption == Self.cancelled {
                let finished = tally.delivered + tally.failed + tally.unregistered
                outcome = .cancelled(delivered: tally.delivered, failed: tally.failed, unregistered: tally.unregistered,
                                     retries: tally.retries, notSent: max(0, (targets ?? finished) - finished),
                                     durationMS: Int(Date().timeIntervalSince(started) * 1000))
            } else if tally.interruption == Self.paused {
                outcome = .paused
            } else if let why = tally.interruption {
                outcome = .interrupted(why)
            } else {
                outcome = .done(delivered: tally.delivered, failed: tally.failed, unregistered: tally.unregistered,
                                retries: tally.retries, matched: plan.hubSends.isEmpty ? tally.matched : nil,
                                durationMS: Int(Date().timeIntervalSince(started) * 1000))
                if tally.matched == 0 && plan.hubSends.isEmpty {
                    env.log.warning("job \(job.id): no registered device matches its audience on \(plan.direct.map(\.rawValue).joined(separator: ", ")): nothing was sent")
                }
            }
        case .register where request == .cancel, .unregister where request == .cancel:
            if !prior.hasJobLine { resultLog.append(ResultLine.job(job, file: name, receivedAt: receivedAt(name), pns: [], targets: 1)) }
            outcome = .cancelled(delivered: 0, failed: 0, unregistered: 0, retries: 0, notSent: 1, durationMS: 0)
        case .register(let registration):
            if !prior.hasJobLine { resultLog.append(ResultLine.job(job, file: name, receivedAt: receivedAt(name), pns: [registration.platform], targets: 1)) }
            do {
                let change = try registrations.register(registration, now: Date())
                let device = change.device
                resultLog.append(ResultLine.registration("register", device: device.id, platform: device.platform, tags: device.tags))
                outcome = hubOutcome(change.hub, log: resultLog)
                    ?? .registry("registered \(device.id) (\(device.platform.rawValue), \(device.tags.count) tags)")
            } catch {
                outcome = Self.registryFailure(error)
            }
        case .unregister(let which):
            if !prior.hasJobLine { resultLog.append(ResultLine.job(job, file: name, receivedAt: receivedAt(name), pns: [], targets: 1)) }
            do {
                let (change, hub) = try registrations.removal(which)
                let what: String
                if case .id(let id) = which { what = id } else { what = change?.device.id ?? "(by handle)" }
                resultLog.append(ResultLine.registration(change != nil ? "unregister" : "unregister-not-found", device: what,
                                                         platform: change?.device.platform, tags: nil))
                outcome = hubOutcome(hub, log: resultLog) ?? .registry(change != nil ? "unregistered \(what)" : "no such device \(what)")
            } catch {
                outcome = Self.registryFailure(error)
            }
        }
        return finish(name, job: job, log: resultLog, outcome: outcome, started: started, file: file)
    }

    /// Several hosts sharing a PostgreSQL registry: the first to claim a send job's id sends it,
    /// the others report a duplicate (a single-host registry claims every id). nil: go on.
    private func claim(_ job: Job, name: String, log: ResultLog, logURL: URL, file: JobFile) -> JobReport? {
        do {
            if try env.registry.claimJob(id: job.id, owner: claimOwner) { return nil }
        } catch {
            try? log.close()
            return JobReport(id: job.id, file: name, outcome: .interrupted("registry: \(RegistryError.detail(error))"))
        }
        try? log.close()
        // The log this run opened stays empty: the job's log is on the host that sends it.
        if let size = (try? FileManager.default.attributesOfItem(atPath: logURL.path))?[.size] as? Int, size == 0 {
            try? FileManager.default.removeItem(at: logURL)
        }
        guard file.isAt(env.spool.url(.active, name).path) else { return JobReport(id: job.id, file: name, outcome: .skipped) }
        env.spool.complete(name, as: "\(name.dropLast(5)).duplicate.json")
        return JobReport(id: job.id, file: name, outcome: .duplicate)
    }

    /// One `hub` line in the result log per hub write of a registration change. A change the hub
    /// never confirmed fails the job with the reason: the local registry already has it, and
    /// `hub sync` writes it once the hub answers.
    private func hubOutcome(_ outcomes: [InstallationWriter.Outcome], log: ResultLog) -> JobReport.Outcome? {
        for outcome in outcomes { log.append(outcome.logLine) }
        let failures = outcomes.filter { !$0.ok }.map(\.summary)
        guard !failures.isEmpty else { return nil }
        return .failed(failures.joined(separator: "; ") + "; the local registry has the change, and `pushspool hub sync` writes it to the hub once it answers")
    }

    /// The job's result log, open and locked; throws the report to give when it cannot be had.
    private func lockLog(_ url: URL, job: Job, name: String) throws(JobReport) -> ResultLog {
        do {
            return try ResultLog(url: url)
        } catch .busy {
            if isWorking(on: job.id, besides: name) { throw JobReport(id: job.id, file: name, outcome: .waiting) }
            // Or such a job's run ended since the attempt: its lock is free now.
            if let log = try? ResultLog(url: url) { return log }
            throw JobReport(id: job.id, file: name, outcome: .busy)
        } catch {
            throw JobReport(id: job.id, file: name, outcome: .interrupted("cannot open result log: \(error)"))
        }
    }

    /// Whether a job file other than `name` with the id `id` is being run here.
    func isWorking(on id: String, besides name: String) -> Bool {
        let key = Identifier.jobKey(id)   // spellings that differ only by case are one id
        return working.withLock { $0.contains { $0.key != name && Identifier.jobKey($0.value) == key } }
    }

    /// Writes the summary, makes the log durable, then moves the job. If the log cannot be made
    /// durable (full disk), the job stays in `active/` and is resumed later: nothing is lost.
    private func finish(_ name: String, job: Job, log resultLog: ResultLog, outcome: JobReport.Outcome, started: Date,
                        file: JobFile) -> JobReport {
        let ms = Int(Date().timeIntervalSince(started) * 1000)
        switch outcome {
        case .interrupted, .paused:
            try? resultLog.close()
            return JobReport(id: job.id, file: name, outcome: outcome)
        case .cancelled:
            resultLog.append(ResultLine.summary(id: job.id, status: "cancelled", tally: outcome, durationMS: ms, error: nil))
        case .failed(let why):
            resultLog.append(ResultLine.summary(id: job.id, status: "failed", tally: nil, durationMS: ms, error: why))
        default:
            resultLog.append(ResultLine.summary(id: job.id, status: "done", tally: outcome, durationMS: ms, error: nil))
        }
        do {
            try resultLog.close()
        } catch {
            env.log.error("job \(job.id): \(error); job left in active/")
            return JobReport(id: job.id, file: name, outcome: .interrupted("\(error)"))
        }
        if file.isAt(env.spool.url(.active, name).path) {
            if case .failed = outcome { env.spool.quarantine(name) } else { env.spool.complete(name) }
        }
        // Requests about a job that has ended are moot (a pause that came as it finished).
        if let controls = env.controls, controls.request(for: job.id) != nil { controls.clear(job.id) }
        return JobReport(id: job.id, file: name, outcome: outcome)
    }

    /// A registration that could not be written: while another process holds the registry (a large
    /// import) or its database server is unreachable, the job waits in active/ for the next run,
    /// instead of failing for good.
    static func registryFailure(_ error: RegistrationError) -> JobReport.Outcome {
        switch error.kind {
        case .busy: return .interrupted("registry busy (another process is writing it, e.g. an import); the next run applies it")
        case .unavailable: return .interrupted("registry unreachable (\(RegistryError.detail(error))); the next run applies it")
        case .invalid, .other: return .failed("registry update failed: \(RegistryError.detail(error))")
        }
    }

    /// The platforms an invalid job file names in `pns`, as far as they can be read, for its
    /// result log (the job never ran, but its log should say what it asked for).
    static func declaredPlatforms(_ bytes: [UInt8]) -> [Platform] {
        guard let value = try? JSONParser.parse(bytes) else { return [] }
        let names: [String]
        switch value["pns"] {
        case .string(let one)?: names = [one]
        case .array(let items)?: names = items.compactMap { if case .string(let n) = $0 { n } else { nil } }
        default: return []
        }
        var seen: [Platform] = []
        for platform in names.compactMap(Platform.init(name:)) where !seen.contains(platform) { seen.append(platform) }
        return seen
    }

    /// Moves an unprocessable job to `failed/` with a result log saying why in one sentence.
    /// The log is `results/<id>.jsonl` when that name is free; when a job with this id already
    /// has one (a corrected job re-dropped with a typo, a job of that id running now), the
    /// invalid one gets a log of its own and theirs is never touched, so idempotency holds.
    private func quarantine(_ name: String, id: String, error: String, pns: [Platform], file: JobFile?) -> JobReport {
        if let log = env.spool.createResultLog(preferring: id) {
            log.append(ResultLine.jobLine(id: id, file: name, receivedAt: receivedAt(name), pns: pns, targets: 0))
            log.append(ResultLine.summary(id: id, status: "failed", tally: nil, durationMS: 0, error: error))
            try? log.close()
        }
        if let file, !file.isAt(env.spool.url(.active, name).path) {
            return JobReport(id: id, file: name, outcome: .skipped)
        }
        let moved = env.spool.quarantine(name) ?? name
        return JobReport(id: id, file: moved, outcome: .failed(error))
    }

    /// A would-be job whose file name is not valid UTF-8 or holds control characters is never
    /// read: it goes from `folder` straight to `failed/` under a safe name, with a result log
    /// whose error shows the original name's bytes escaped. nil when another dispatcher moved it
    /// first, or (in `active/`) a live one holds it.
    func quarantine(unsafe raw: SpoolName, in folder: Spool.Folder) -> JobReport? {
        let spool = env.spool
        if folder == .active, JobFile.isHeld(raw.path(in: spool.url(.active).path)) { return nil }
        guard let moved = spool.quarantine(raw, from: folder) else { return nil }
        let id = String(moved.dropLast(5))
        let error = "the file name \"\(raw.escaped)\" \(raw.problem ?? "is unsafe"); the job was not read"
        if let log = spool.createResultLog(preferring: id) {
            let received = FileIO.modificationTime(spool.url(.failed, moved).path).map(Date.init(timeIntervalSince1970:)) ?? Date()
            log.append(ResultLine.jobLine(id: id, file: moved, receivedAt: received, pns: [], targets: 0))
            log.append(ResultLine.summary(id: id, status: "failed", tally: nil, durationMS: 0, error: error))
            try? log.close()
        }
        return JobReport(id: id, file: moved, outcome: .failed(error))
    }

    private func receivedAt(_ name: String) -> Date {
        let attrs = try? FileManager.default.attributesOfItem(atPath: env.spool.url(.active, name).path)
        return (attrs?[.modificationDate] as? Date) ?? Date()
    }

    /// The id for an invalid job's result log: the file name, made safe for a file name.
    static func fallbackID(for name: String) -> String {
        let stem = name.hasSuffix(".json") ? String(name.dropLast(5)) : name
        let safe = String(stem.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" }.prefix(128))
        return safe.isEmpty ? "_" : safe
    }
}
