import Dispatch
import Foundation
import PushspoolCore
import Synchronization

/// The fan-out of one send job: streams targets from the registry (bounded memory: the pool's
/// slots block the producer), sends each through its platform's provider, prunes gone devices
/// and appends one delivery line per target as it reaches its final outcome.
struct SendRun {
    let env: JobRunner.Environment
    let job: Job
    let send: SendJob
    let plan: SendPlan
    let log: ResultLog
    let prior: ResultLogContents
    /// Where to keep the progress checkpoint `status` reads, and the targets planned.
    let progress: (url: URL, targets: Int?)

    final class Tally: Sendable {
        struct Counts { var delivered = 0, failed = 0, unregistered = 0, retries = 0, abandoned = 0 }
        let counts: Mutex<Counts>
        init(_ prior: ResultLogContents) {
            counts = Mutex(Counts(delivered: prior.delivered, failed: prior.failed,
                                  unregistered: prior.unregistered, retries: prior.retries))
        }
        func add(_ o: TargetOutcome) {
            counts.withLock { c in
                switch o.status {
                case .delivered: c.delivered += 1
                case .failed: c.failed += 1
                case .unregistered: c.unregistered += 1
                }
                c.retries += max(0, o.attempts - 1)
            }
        }
    }

    struct Result {
        var delivered = 0, failed = 0, unregistered = 0, retries = 0
        /// Registry devices the audience matched on the direct routes (nil: no direct route).
        var matched: Int?
        var interruption: String?
    }

    func execute() -> Result {
        let tally = Tally(prior)
        let inFlight = DispatchGroup()
        var interruption: String?
        var matched = 0
        let checkpoints = Checkpoints(run: self, tally: tally)
        defer { checkpoints.stop() }

        for hubSend in plan.hubSends {
            let recipient = Recipient.hub(hubSend.audience)
            if prior.finished.contains(ResultLogContents.key(platform: hubSend.platform, recipient: recipient)) { continue }
            dispatch(platform: hubSend.platform, recipient: recipient, notification: hubSend.notification, tally: tally, group: inFlight)
        }
        if !plan.direct.isEmpty {
            do {
                try env.registry.forEach(platforms: Set(plan.direct), matching: send.audience.tagExpression) { device in
                    if env.isStopping() {
                        interruption = "stopping"
                        return false
                    }
                    // Unlogged deliveries would be sent again on resume: stop while the log
                    // cannot be written (full disk) and leave the job to be resumed.
                    if let failure = log.failure {
                        interruption = "result log: \(failure)"
                        return false
                    }
                    matched += 1
                    let recipient = Recipient.device(device)
                    if prior.finished.contains(ResultLogContents.key(platform: device.platform, recipient: recipient)) { return true }
                    guard let notification = plan.renditions[device.platform]?.notification(for: device.lang) else { return true }
                    dispatch(platform: device.platform, recipient: recipient, notification: notification, tally: tally, group: inFlight)
                    return true
                }
            } catch {
                interruption = "registry: \(error)"
                env.log.error("job \(job.id): reading the registry failed: \(error)")
            }
        }
        inFlight.wait()
        let c = tally.counts.withLock { $0 }
        // A target left unsent by a stop keeps the job in active/ for the resume.
        if interruption == nil && c.abandoned > 0 { interruption = "stopping" }
        return Result(delivered: c.delivered, failed: c.failed, unregistered: c.unregistered, retries: c.retries,
                      matched: plan.direct.isEmpty ? nil : matched, interruption: interruption)
    }

    /// Rewrites the progress checkpoint once a second while the job sends; after `stop()`
    /// returns, nothing writes it again (the runner removes it).
    final class Checkpoints: @unchecked Sendable {   // the timer is only touched in init and stop
        private let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        private let stopped = Mutex(false)

        init(run: SendRun, tally: Tally) {
            timer.schedule(deadline: .now(), repeating: 1, leeway: .milliseconds(200))
            timer.setEventHandler { [self] in
                stopped.withLock { done in if !done { run.writeCheckpoint(tally) } }
            }
            timer.resume()
        }

        func stop() {
            stopped.withLock { $0 = true }
            timer.cancel()
        }
    }

    func writeCheckpoint(_ tally: Tally) {
        // Once a second is also when a deleted result log (an `rm -rf results/`) is put back.
        if let restored = log.restoreIfDeleted() { env.log.warning("job \(job.id): \(restored)") }
        let c = tally.counts.withLock { $0 }
        ProgressCheckpoint(targets: progress.targets, finished: c.delivered + c.failed + c.unregistered,
                           delivered: c.delivered, failed: c.failed, unregistered: c.unregistered, updatedAt: Date())
            .write(to: progress.url)
    }

    private func dispatch(platform: Platform, recipient: Recipient, notification: RenderedNotification, tally: Tally,
                          group: DispatchGroup) {
        guard let state = env.routes[platform] else { return }
        let request = SendRequest(jobID: job.id, platform: platform, recipient: recipient, notification: notification)
        let registry = env.registry, log = self.log, appLog = env.log, jobID = job.id
        group.enter()
        env.pool.submit(request, via: state, isStopping: env.isStopping) { outcome in
            // Left for the resumed job: not final, not logged, not counted.
            if outcome.abandoned {
                tally.counts.withLock { $0.abandoned += 1 }
                return group.leave()
            }
            if outcome.status == .unregistered, case .device(let device) = recipient,
               case .deviceGone(let since) = outcome.result.disposition {
                do {
                    try registry.removeGone(id: device.id, handle: device.handle,
                                            since: since.map { Date(timeIntervalSince1970: $0) })
                } catch {
                    appLog.error("job \(jobID): could not remove device \(device.id) from the registry: \(error)")
                }
            }
            log.append(line: ResultLine.delivery(platform: platform, provider: state.name, recipient: recipient, outcome: outcome))
            tally.add(outcome)
            group.leave()
        }
    }
}
