import Foundation
import PushspoolCore

/// The result log of a job the runner holds: locked, so two job files with one id (or spellings
/// that differ only by case) never run at once and the second finds the first's summary; read for
/// what earlier runs left; set aside when a new run starts over an ended one; and the job's id
/// claimed in a shared registry.
struct JobLogs: Sendable {
    let env: JobRunner.Environment
    /// Who claims job ids in a shared registry: this host and spool.
    let claimOwner: String
    /// The job files being run here: a second file with a running job's id waits for it.
    let working: WorkingJobs

    /// The job's log, open and locked, and what earlier runs left in it (nil: nothing).
    struct Opened {
        var log: ResultLog
        var url: URL
        var contents: ResultLogContents?
    }

    func open(_ held: HeldJob) throws(JobReport) -> Opened {
        let url = env.spool.url(.results, "\(env.spool.adoptResultLogName(jobID: held.job.id)).jsonl")
        let log = try lock(url, held)
        // A send job that crashed left where to pick up (its progress checkpoint): then only the
        // log's tail is read, not every line it already holds.
        let checkpoint = ProgressCheckpoint.read(ProgressCheckpoint.url(in: env.spool, jobID: held.job.id))
        let resumeAt = checkpoint?.resume.flatMap { $0.registry == env.registry.location ? $0.point : nil }
        return Opened(log: log, url: url, contents: ResultLogContents.read(url, from: resumeAt))
    }

    /// Keeps an ended run's log under a name of its own and opens a new one for this run.
    func setAside(_ opened: Opened, as label: JobDecision.SetAside, _ held: HeldJob) throws(JobReport) -> Opened {
        try? opened.log.close()
        guard env.spool.setAsideResultLog(of: held.job.id, as: label.rawValue) else {
            throw held.report(.interrupted(.resultLog("cannot set the earlier result log of \(held.job.id) aside")))
        }
        return Opened(log: try lock(opened.url, held), url: opened.url, contents: nil)
    }

    /// Several hosts sharing a PostgreSQL registry: the first to claim a send job's id sends it
    /// (a single-host registry grants every claim). The reason comes with `.unavailable`.
    func claim(_ job: Job) -> (JobDecision.Claim, StopReason?) {
        do {
            return try env.registry.claimJob(id: job.id, owner: claimOwner) ? (.granted, nil) : (.heldElsewhere, nil)
        } catch {
            return (.unavailable, .registry(RegistryError.detail(error)))
        }
    }

    /// Closes a log this run will not write to; one it opened and left empty goes (a duplicate's
    /// log is on the host that sends it).
    func discard(_ opened: Opened) {
        try? opened.log.close()
        if let size = (try? FileManager.default.attributesOfItem(atPath: opened.url.path))?[.size] as? Int, size == 0 {
            try? FileManager.default.removeItem(at: opened.url)
        }
    }

    /// The log, open and locked; throws the report to give when it cannot be had.
    private func lock(_ url: URL, _ held: HeldJob) throws(JobReport) -> ResultLog {
        do {
            return try ResultLog(url: url)
        } catch .busy {
            if working.isWorking(on: held.job.id, besides: held.name) { throw held.report(.waiting) }
            // Or such a job's run ended since the attempt: its lock is free now.
            if let log = try? ResultLog(url: url) { return log }
            throw held.report(.busy)
        } catch {
            throw held.report(.interrupted(.resultLog("cannot open result log: \(error)")))
        }
    }
}

extension JobDecision.PriorLog {
    /// What a result log says about earlier runs of the job in file `name`: the one place the
    /// log's contents are read as a decision's input.
    init(_ contents: ResultLogContents?, file name: String) {
        guard let contents else { self = .none; return }
        let thisFile = contents.file == name
        switch contents.summaryStatus {
        case nil: self = !contents.hasJobLine ? .none : thisFile ? .unfinishedThisFile : .unfinishedOtherFile
        case .done?: self = thisFile ? .doneThisFile : .doneOtherFile
        case .cancelled?: self = thisFile ? .cancelledThisFile : .cancelledOtherFile
        case _?: self = .failed
        }
    }
}
