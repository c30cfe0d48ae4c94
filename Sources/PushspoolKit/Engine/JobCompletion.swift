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
        case .cancelled:
            log.append(ResultLine.summary(id: id, status: "cancelled", tally: outcome, durationMS: ms, error: nil))
        case .failed(let why):
            log.append(ResultLine.summary(id: id, status: "failed", tally: nil, durationMS: ms, error: why))
        default:
            log.append(ResultLine.summary(id: id, status: "done", tally: outcome, durationMS: ms, error: nil))
        }
        do {
            try log.close()
        } catch {
            env.log.error("job \(id): \(error); job left in active/")
            return held.report(.interrupted(.resultLog("\(error)")))
        }
        if held.isInPlace {
            if case .failed = outcome { env.spool.quarantine(held.name) } else { env.spool.complete(held.name) }
        }
        // Requests about a job that has ended are moot (a pause that came as it finished).
        if let controls = env.controls, controls.request(for: id) != nil { controls.clear(id) }
        return held.report(outcome)
    }
}
