import Foundation
import PushspoolCore

/// The end of a job's run: writes the summary, makes the log durable, then moves the job. If the
/// log cannot be made durable (full disk), the job stays in `active/` and is resumed later:
/// nothing is lost. A run that stopped (paused, interrupted) writes no summary and stays.
struct JobCompletion: Sendable {
    let env: JobRunner.Environment

    func finish(_ held: HeldJob, log: ResultLog, outcome: JobReport.Outcome) -> JobReport {
        let id = held.job.id, ms = held.elapsedMS
        switch outcome {
        case .interrupted, .paused:
            try? log.close()
            return held.report(outcome)
        default:
            log.append(ResultRecord.summary(id: id, outcome: outcome, durationMS: ms))
        }
        // A tracked job's events are kept `receipts.keep_days` from now.
        if case .send(let send) = held.job.kind,
           NotificationTagger.tracking(send, apps: apps(of: held.job), configs: env.appConfigs) != .off {
            do { try env.registry.endTrackedJob(id: id, at: env.clock.wall()) } catch {
                env.log.warning("the registry did not record its end for its receipts: \(RegistryError.detail(error))", [(.job, id)])
            }
        }
        // A job shared through the queue ends there too (`pushspool results` on any host).
        if let queue = env.queue, case .send = held.job.kind {
            let summary = String(decoding: ResultRecord.Summary(id: id, outcome: outcome, durationMS: ms).line(), as: UTF8.self)
            do { try queue.store.end(id, summaryLine: summary) } catch {
                env.log.warning("the shared queue did not record its end: \(RegistryError.detail(error))", [(.job, id)])
            }
        }
        do {
            try log.close()
            // On disk before the job leaves active/: a crash from here on repeats the event
            // (same id), never loses it.
            if let hooks = env.webhooks, hooks.wants(.jobFinished) {
                let summary = ResultRecord.Summary(id: id, outcome: outcome, durationMS: ms).line()
                try hooks.jobFinished(summary: summary, jobID: id, apps: apps(of: held.job))
            }
        } catch {
            env.log.error("\(error); job left in active/", [(.job, id)])
            return held.report(.interrupted(.resultLog("\(error)")))
        }
        if held.isInPlace {
            if case .failed = outcome { env.spool.quarantine(held.name) } else { env.spool.complete(held.name) }
        }
        // Requests about a job that has ended are moot (a pause that came as it finished).
        if let controls = env.controls, controls.request(for: id) != nil { controls.clear(id) }
        return held.report(outcome)
    }

    /// The apps a job was about, for the webhooks' `apps` filter.
    private func apps(of job: Job) -> [String] {
        switch job.kind {
        case .send(let send): send.apps.ids(known: Set(env.apps.apps.keys), defaultApp: env.apps.defaultApp)
        case .register(let r): [r.app ?? env.apps.defaultApp]
        case .unregister: [env.apps.defaultApp]
        }
    }
}
