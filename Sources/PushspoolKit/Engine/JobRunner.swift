import Foundation
import PushspoolCore

/// Runs one claimed job (`active/<name>`) to its end: validate → result log → targets →
/// providers → outcomes → summary → `done/` (or `failed/`). Safe to run again on the same job
/// after a crash: targets the result log already records as final are not sent again. What to
/// do at each step is `JobDecision`'s; this class does the I/O it asks for.
final class JobRunner: Sendable {
    typealias Origin = JobDecision.Origin

    let env: Environment
    /// Which dispatcher runs each job in `active/`, for `status`.
    let owners: JobOwners
    let quarantine: JobQuarantine
    private let logs: JobLogs
    private let sends: SendExecutor
    private let registrations: RegistrationExecutor
    private let working = WorkingJobs()

    init(_ env: Environment) {
        self.env = env
        owners = JobOwners(spool: env.spool, clock: env.clock)
        quarantine = JobQuarantine(spool: env.spool, clock: env.clock)
        logs = JobLogs(env: env, claimOwner: JobClaimOwner.current(spool: env.spool), working: working)
        sends = SendExecutor(env: env)
        // Registration changes of hub-routed platforms also go to the hub.
        let hub = InstallationWriter(apps: env.apps, pool: env.pool, isStopping: env.isStopping)
        registrations = RegistrationExecutor(registrations: RegistrationService(registry: env.registry, hub: hub), clock: env.clock)
    }

    func run(_ name: String, origin: Origin) -> JobReport {
        let started = env.clock.wall(), fallbackID = Self.fallbackID(for: name)
        let activePath = env.spool.url(.active, name).path
        let file: JobFile
        do { file = try JobFile(path: activePath) } catch { return quarantine.unopened(name, id: fallbackID, error: error) }
        defer { file.release() }
        // Locked only after its owner finished and moved it on: nothing left to do here.
        guard file.isAt(activePath) else { return JobReport(id: fallbackID, file: name, outcome: .skipped) }
        owners.take(name)
        defer { owners.release(name) }
        let bytes: [UInt8], job: Job
        do { bytes = try file.read() } catch {
            return quarantine.quarantine(name, id: fallbackID, error: "cannot read the job file: \(error)", pns: [], file: file)
        }
        do { job = try JobParser.parse(bytes, fileName: name) } catch {
            // Refused or not, a secure job's text stays its owner's in failed/ too.
            if JobParser.isSecure(bytes) { chmod(activePath, 0o600) }
            return quarantine.invalid(name, bytes: bytes, error: error, fallbackID: fallbackID, file: file)
        }
        // A secure job's text stays its owner's, however its file was dropped (0600).
        if case .send(let send) = job.kind, send.secure { chmod(activePath, 0o600) }
        working.begin(name, id: job.id)
        defer { working.end(name) }
        let kind = switch job.kind { case .send: "send"; case .register: "register"; case .unregister: "unregister" }
        env.log.log(env.log.isStructured ? .info : .debug, "job started", [(.job, job.id), (.file, name), (.kind, kind)])
        let held = HeldJob(name: name, job: job, file: file, origin: origin, activePath: activePath, started: started, clock: env.clock)
        do { return try decide(held) } catch { return error }
    }

    /// Asks `JobDecision` at each point where the run learns something, and does what it says.
    private func decide(_ held: HeldJob) throws(JobReport) -> JobReport {
        let job = held.job
        var plan = SendPlan(), kind = JobDecision.Kind.registration, timing = JobDecision.Timing.due
        if case .send(let send) = job.kind {
            kind = .send
            if let due = send.notBefore, due > env.clock.wall() { timing = .notYetDue }
        }
        let decision = JobDecision(origin: held.origin, kind: kind, control: .init(env.controls?.request(for: job.id)), timing: timing)
        if let early = decision.onArrival() { return end(early, held, opened: nil) }
        // Prepare everything that can fail for the whole job before anything is sent.
        if case .send(let send) = job.kind {
            switch SendPlan.prepare(job, send, env: env) {
            case .success(let made): plan = made
            case .failure(let problem) where problem.retry: return held.report(.interrupted(.registry(problem.description)))
            case .failure(let problem): return quarantine.quarantine(held.name, id: job.id, error: problem.description, pns: send.platforms, file: held.file)
            }
            do throws(RegistryError) {
                if let problem = try plan.channelProblem(send, registry: env.registry) {
                    return quarantine.quarantine(held.name, id: job.id, error: problem, pns: send.platforms, file: held.file)
                }
            } catch {
                return held.report(.interrupted(.registry(error.message)))
            }
        }
        var opened = try logs.open(held)
        var prior = JobDecision.PriorLog(opened.contents, file: held.name)
        while true {
            switch decision.afterLog(prior) {
            case .setAside(let label):
                opened = try logs.setAside(opened, as: label, held)
                prior = .none
            case .end(let action), .go(let action):
                return end(action, held, opened: opened, plan: plan)
            case .claim:
                let (claim, why) = logs.claim(job)
                return end(decision.afterClaim(claim, prior: prior), held, opened: opened, plan: plan, claimFailure: why)
            }
        }
    }

    /// Does the decided action: leaves or moves the job, or runs it and finishes it.
    private func end(_ action: JobDecision.Action, _ held: HeldJob, opened: JobLogs.Opened?, plan: SendPlan = SendPlan(),
                     claimFailure: StopReason? = nil) -> JobReport {
        let log = opened?.log
        switch action {
        case .holdPaused: return held.report(.paused)
        case .passOver: return held.report(.skipped)
        case .returnToIncoming:
            _ = env.spool.move(held.name, from: .active, to: .incoming)
            return held.report(.skipped)
        case .claimUnavailable:
            try? log?.close()
            return held.report(.interrupted(claimFailure ?? .registry("the job's id could not be claimed")))
        case .finishAlreadyDone, .duplicate:
            if let opened { logs.discard(opened) }
            guard held.isInPlace else { return held.report(.skipped) }
            if action == .finishAlreadyDone {
                env.spool.complete(held.name)     // this very file crashed after its summary, before the move
                return held.report(.registry("already complete"))
            }
            let moved = env.spool.complete(held.name, as: "\(held.name.dropLast(5)).duplicate.json")
            return held.report(.duplicate, file: moved ?? held.name)
        case .cancel(let writeJobLine), .run(let writeJobLine):
            guard let opened, let log else { return held.report(.skipped) }   // decided only once the log is open
            let cancel = action == .cancel(writeJobLine: writeJobLine), prior = opened.contents ?? ResultLogContents()
            let outcome: JobReport.Outcome = switch held.job.kind {
            case .send(let send): sends.execute(held, send: send, plan: plan, log: log, prior: prior, writeJobLine: writeJobLine, cancel: cancel)
            case .register(let r): registrations.register(r, held, log: log, writeJobLine: writeJobLine, cancel: cancel)
            case .unregister(let w): registrations.unregister(w, held, log: log, writeJobLine: writeJobLine, cancel: cancel)
            }
            return JobCompletion(env: env).finish(held, log: log, outcome: outcome)
        }
    }

    /// Whether a job file other than `name` with the id `id` is being run here.
    func isWorking(on id: String, besides name: String) -> Bool { working.isWorking(on: id, besides: name) }

    /// The id for an invalid job's result log: the file name, made safe for a file name.
    static func fallbackID(for name: String) -> String {
        let stem = name.hasSuffix(".json") ? String(name.dropLast(5)) : name
        let safe = String(stem.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" }.prefix(128))
        return safe.isEmpty ? "_" : safe
    }
}
