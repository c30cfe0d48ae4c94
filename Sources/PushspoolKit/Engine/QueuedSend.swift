import Foundation
import PushspoolCore

/// A send job shared through the queue, as the host that accepted it runs it: the job is
/// published (once: a resumed run finds it there), every host's `ChunkWorker` sends its chunks
/// (this one's too), and this run writes each completed chunk's outcome lines into the job's
/// result log, in today's format, until the last chunk is in. A cancel or pause made on any
/// host ends the run once no host holds a chunk of the job; a stop here leaves the job in
/// `active/`, its chunks going on elsewhere, to be followed again on resume.
struct QueuedSend {
    let env: JobRunner.Environment
    let queue: SharedQueue
    let held: HeldJob
    let log: ResultLog
    /// The log as the run found it (a resumed run): its lines are not written twice.
    let prior: ResultLogContents
    let targets: Int?
    /// The job's platforms, for its job line.
    let platforms: [Platform]
    /// Whether the job also has hub, topic or channel requests (its chunk 0).
    let requests: Bool

    func execute() -> SendRun.Result {
        let id = held.job.id
        let tally = SendRun.Tally(prior)
        do {
            let body = String(decoding: try held.file.read(), as: UTF8.self)
            let jobLine = String(decoding: ResultRecord.job(held.job, file: held.name, receivedAt: held.receivedAt, pns: platforms,
                                                            targets: targets ?? 0).line(), as: UTF8.self)
            try queue.store.publish(id: id, body: body, jobLine: jobLine, targets: targets, requests: requests, devices: true)
        } catch {
            env.log.error("publishing it to the shared queue failed: \(RegistryError.detail(error))", [(.job, id)])
            return result(tally, interruption: .registry(RegistryError.detail(error)))
        }
        let progress = ProgressCheckpoint.url(in: env.spool, jobID: id)
        env.activity?.begin(Activity.Progress(id: id, targets: targets, finished: prior.delivered + prior.failed + prior.unregistered + prior.capped,
                                              failed: prior.failed,
                                              finishedThisRun: 0, started: Date(), spreadOverSeconds: nil)) {
            tally.counts.withLock { ($0.finished, $0.failed) }
        }
        defer { env.activity?.end(id) }
        var seen = queue.wakeups.current
        var unreachable = false
        var applied: Set<Int> = []
        var checkpointed = false
        while true {
            if env.isStopping() { return result(tally, interruption: .stopping) }
            // A request made on this host reaches every host through the queue.
            if let local = env.controls?.request(for: id), queue.request(for: id) != local {
                _ = try? queue.store.steer(id, local)
                queue.refreshRequests()
            }
            do {
                guard let state = try queue.store.progress(id) else {
                    return result(tally, interruption: .registry("the job is no longer in the shared queue"))
                }
                if unreachable { env.log.info("the shared queue answers again", [(.job, id)]) }
                unreachable = false
                for chunk in state.unapplied {
                    // Written already, its mark lost with the database: not written twice.
                    if !applied.contains(chunk) { try apply(chunk, tally) }
                    applied.insert(chunk)
                    try queue.store.markApplied(job: id, chunk: chunk)
                }
                // For `status`, when lines came (a wake-up for another job changes nothing).
                if !state.unapplied.isEmpty || !checkpointed {
                    let c = tally.counts.withLock { $0 }
                    ProgressCheckpoint(targets: targets, finished: c.finished, delivered: c.delivered, failed: c.failed,
                                       unregistered: c.unregistered, capped: c.capped, updatedAt: Date())
                        .write(to: progress)
                    checkpointed = true
                }
                switch state.written.next {
                case .done:
                    return result(tally, interruption: nil)
                case .cancelled:
                    // What the chunks let go had recorded is final too.
                    for chunk in try queue.store.unfinishedChunks(id) where !applied.contains(chunk) { try apply(chunk, tally) }
                    return result(tally, interruption: .cancelled)
                case .paused:
                    // Kept here too, so the job stays paused across restarts of this host.
                    if env.controls?.request(for: id) != .pause { try? env.controls?.write(.pause, id: id) }
                    return result(tally, interruption: .paused)
                case .wait:
                    break
                }
            } catch {
                if !unreachable {
                    env.log.error("the shared queue cannot be read (\(RegistryError.detail(error))); waiting for it", [(.job, id)])
                }
                unreachable = true
            }
            seen = queue.wakeups.wait(after: seen, timeout: queue.fallbackSeconds)
        }
    }

    /// Writes one chunk's recorded lines into the result log (those a resumed run's log holds
    /// already, from a chunk written just before a crash, are left out).
    private func apply(_ chunk: Int, _ tally: SendRun.Tally) throws {
        for batch in try queue.store.lines(job: held.job.id, chunk: chunk) {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(batch.utf8.count)
            for line in batch.utf8.split(separator: UInt8(ascii: "\n")) {
                let line = Array(line)
                if prior.alreadyHas(line) { continue }
                if let (status, attempts) = DeliveryLine.statusAndAttempts(line) { tally.add(status, attempts: attempts) }
                bytes += line
                bytes.append(UInt8(ascii: "\n"))
            }
            log.append(line: bytes)
            if let failure = log.failure { throw RegistryError("result log: \(failure)") }
        }
    }

    /// How the run ended, with the log's counts (the lines before it and those it wrote).
    private func result(_ tally: SendRun.Tally, interruption: StopReason?) -> SendRun.Result {
        let c = tally.counts.withLock { $0 }
        return SendRun.Result(delivered: c.delivered, failed: c.failed, unregistered: c.unregistered, retries: c.retries,
                              capped: c.capped, matched: c.finished, interruption: interruption)
    }
}
