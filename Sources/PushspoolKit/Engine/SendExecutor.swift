import Foundation
import PushspoolCore

/// Runs a send job whose result log is open: writes its job line on its first run (with the
/// targets planned), sends to every target not yet final (or, cancelled, to none) and says how
/// the run ended.
struct SendExecutor: Sendable {
    let env: JobRunner.Environment

    func execute(_ held: HeldJob, send: SendJob, plan: SendPlan, log: ResultLog, prior: ResultLogContents,
                 writeJobLine: Bool, cancel: Bool) -> JobReport.Outcome {
        var targets = prior.targets
        if writeJobLine {
            // Without the count the job line would announce a wrong total: the job waits in
            // active/ for the registry, as when it cannot read the audience (nothing was sent).
            let count: Int
            do { count = try plan.targetCount(send, registry: env.registry) } catch {
                env.log.error("counting its audience in the registry failed: \(RegistryError.detail(error))", [(.job, held.job.id)])
                return .interrupted(.registry(RegistryError.detail(error)))
            }
            targets = count
            log.append(ResultRecord.job(held.job, file: held.name, receivedAt: held.receivedAt, pns: send.platforms, targets: count))
        }
        let progress = ProgressCheckpoint.url(in: env.spool, jobID: held.job.id)
        let stop = StopSignal(isStopping: env.isStopping, controls: env.controls, jobID: held.job.id)
        let run = SendRun(services: env.sending, job: held.job, send: send, plan: plan, log: log, prior: prior, stop: stop, progress: (progress, targets))
        let tally: SendRun.Result
        if cancel {
            tally = SendRun.Result(delivered: prior.delivered, failed: prior.failed, unregistered: prior.unregistered,
                                   retries: prior.retries, capped: prior.capped, interruption: .cancelled)
        } else if let queue = env.queue, queue.shares(send, plan: plan, targets: targets) {
            tally = QueuedSend(env: env, queue: queue, held: held, log: log, prior: prior, targets: targets,
                               platforms: send.platforms, requests: !plan.hubSends.isEmpty).execute()
        } else if LocalTimeRun.applies(to: send, plan: plan, apps: env.appConfigs) {
            tally = LocalTimeRun(run: run, local: send.localDelivery, clocks: env.peoplesClocks).execute()
        } else {
            tally = run.execute()
        }
        try? FileManager.default.removeItem(at: progress)
        // Between waves `status` shows the next one; otherwise there is none.
        let next = NextWave.url(in: env.spool, jobID: held.job.id)
        if case .nextWave(_, let at, let devices)? = tally.interruption {
            NextWave(at: at, devices: devices).write(to: next)
        } else {
            try? FileManager.default.removeItem(at: next)
        }
        return outcome(of: tally, held, plan: plan, targets: targets)
    }

    private func outcome(of tally: SendRun.Result, _ held: HeldJob, plan: SendPlan, targets: Int?) -> JobReport.Outcome {
        switch tally.interruption {
        case .cancelled?:
            let finished = tally.delivered + tally.failed + tally.unregistered + tally.capped
            return .cancelled(delivered: tally.delivered, failed: tally.failed, unregistered: tally.unregistered,
                              retries: tally.retries, notSent: max(0, (targets ?? finished) - finished), durationMS: held.elapsedMS,
                              capped: tally.capped)
        case .paused?:
            return .paused
        case let why?:
            return .interrupted(why)
        case nil:
            if tally.matched == 0 && plan.hubSends.isEmpty {
                env.log.warning("no registered device matches its audience on \(plan.direct.map(\.rawValue).joined(separator: ", ")): nothing was sent",
                                 [(.job, held.job.id)])
            }
            return .done(delivered: tally.delivered, failed: tally.failed, unregistered: tally.unregistered,
                         retries: tally.retries, matched: plan.hubSends.isEmpty ? tally.matched : nil, durationMS: held.elapsedMS,
                         capped: tally.capped)
        }
    }
}
