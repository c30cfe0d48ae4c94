import Foundation
import PushspoolCore
import Synchronization

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
                                              finishedThisRun: 0, started: env.clock.wall(), spreadOverSeconds: nil)) {
            tally.counts.withLock { ($0.finished, $0.failed) }
        }
        defer { env.activity?.end(id) }
        // Chunks sent on this host write into the log directly (not read back from the queue).
        let local = OriginLog(log: log, tally: tally, prior: prior)
        queue.follow(id, local)
        defer { queue.unfollow(id, local) }
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
            var look: Double? = nil
            do {
                guard let state = try queue.store.progress(id) else {
                    return result(tally, interruption: .registry("the job is no longer in the shared queue"))
                }
                if unreachable { env.log.info("the shared queue answers again", [(.job, id)]) }
                unreachable = false
                for chunk in state.unapplied {
                    // Written already, its mark lost with the database: not written twice.
                    if !applied.contains(chunk) { try apply(chunk, local) }
                    applied.insert(chunk)
                    try queue.store.markApplied(job: id, chunk: chunk)
                }
                // For `status`, when lines came (a wake-up for another job changes nothing).
                if !state.unapplied.isEmpty || !checkpointed {
                    let c = tally.counts.withLock { $0 }
                    ProgressCheckpoint(targets: targets, finished: c.finished, delivered: c.delivered, failed: c.failed,
                                       unregistered: c.unregistered, capped: c.capped, updatedAt: env.clock.wall())
                        .write(to: progress)
                    checkpointed = true
                }
                switch state.written.next {
                case .done:
                    return result(tally, interruption: nil)
                case .cancelled:
                    // What the chunks let go had recorded is final too.
                    for chunk in try queue.store.unfinishedChunks(id) where !applied.contains(chunk) { try apply(chunk, local) }
                    return result(tally, interruption: .cancelled)
                case .paused:
                    // Kept here too, so the job stays paused across restarts of this host.
                    if env.controls?.request(for: id) != .pause { try? env.controls?.write(.pause, id: id) }
                    return result(tally, interruption: .paused)
                case .wait:
                    look = state.written.look
                }
            } catch {
                if !unreachable {
                    env.log.error("the shared queue cannot be read (\(RegistryError.detail(error))); waiting for it", [(.job, id)])
                }
                unreachable = true
            }
            // Every change this run waits for is announced (a chunk done or released, a steer, a
            // job ended: `NOTIFY`; the listener's reconnect; a ring: `control/`, a stop) but two:
            // a steered job's lease running out (`Progress.look`), and the database coming back,
            // looked for every `fallbackSeconds`.
            seen = queue.wakeups.wait(after: seen, timeout: unreachable ? queue.fallbackSeconds : look, stopping: env.isStopping)
        }
    }

    /// Writes one chunk's recorded lines into the result log, but for the batches a chunk sent
    /// on this host wrote there already.
    private func apply(_ chunk: Int, _ local: OriginLog) throws {
        try local.apply(chunk) { written in try queue.store.lines(job: held.job.id, chunk: chunk, excluding: written) }
    }

    /// How the run ended, with the log's counts (the lines before it and those it wrote).
    private func result(_ tally: SendRun.Tally, interruption: StopReason?) -> SendRun.Result {
        let c = tally.counts.withLock { $0 }
        return SendRun.Result(delivered: c.delivered, failed: c.failed, unregistered: c.unregistered, retries: c.retries,
                              capped: c.capped, matched: c.finished, interruption: interruption)
    }
}

/// The result log of a queued job this process accepted, while its `QueuedSend` follows it. A
/// chunk of the job sent on this host hands each batch it recorded in the queue straight to
/// the log (`take`), and the origin then reads back only the batches other hosts recorded: the
/// queue's lines are not read back by the host that wrote them. Lines a resumed run's log holds
/// already are left out (a chunk written just before a crash).
final class OriginLog: Sendable {
    private let log: ResultLog
    private let tally: SendRun.Tally
    private let prior: ResultLogContents
    /// What this log holds already of each chunk: the queue's rows, and where their lines went
    /// in the file; and whether the origin still follows.
    private struct Taken {
        var rows: [Int: [Int64]] = [:]
        var spans: [Int: [(offset: Int64, count: Int)]] = [:]
        var open = true
    }
    private let state = Mutex(Taken())

    init(log: ResultLog, tally: SendRun.Tally, prior: ResultLogContents) {
        self.log = log
        self.tally = tally
        self.prior = prior
    }

    /// A batch a chunk sent here recorded in the queue as `row` (its outcomes `counted`, when
    /// known); false when it is not written (the origin no longer follows, or the log failed):
    /// the origin reads it from the queue.
    func take(chunk: Int, row: Int64, lines: [UInt8], counted: LogPosition?) -> Bool {
        state.withLock { s in
            guard s.open else { return false }
            let at = log.size
            if let counted, prior.finished.count == 0 {
                // A log with no earlier run: every line goes in as it is.
                log.append(line: lines)
                guard log.failure == nil else { return false }
                tally.add(counted)
            } else {
                guard (try? write(lines[...])) != nil else { return false }
            }
            s.rows[chunk, default: []].append(row)
            s.spans[chunk, default: []].append((at, Int(log.size - at)))
            return true
        }
    }

    /// Writes what the queue holds of a completed (or, cancelled, a let-go) chunk and this log
    /// lacks: `read` is given the rows written here already. When the chunk also has rows from
    /// elsewhere, their lines for targets this log has from the chunk already are left out: rows
    /// committed without waiting for the flush (`queue.durable_outcomes` off) can be lost in a
    /// database crash after the origin wrote them, and their targets are then sent again.
    func apply(_ chunk: Int, read: ([Int64]) throws -> [String]) throws {
        try state.withLock { s in
            let batches = try read(s.rows[chunk] ?? [])
            let here = batches.isEmpty ? nil : lines(at: s.spans[chunk] ?? [])
            for batch in batches { try write(Array(batch.utf8)[...], skipping: here) }
            s.rows[chunk] = nil
            s.spans[chunk] = nil
        }
    }

    /// Stops taking batches (the origin's run ends; the job's last lines come after).
    func close() { state.withLock { $0.open = false } }

    /// The targets of the lines this log took at `spans` (nil: none).
    private func lines(at spans: [(offset: Int64, count: Int)]) -> ResultLogContents? {
        guard !spans.isEmpty, let file = try? FileHandle(forReadingFrom: log.url) else { return nil }
        defer { try? file.close() }
        var contents = ResultLogContents()
        for span in spans {
            guard (try? file.seek(toOffset: UInt64(span.offset))) != nil, let data = try? file.read(upToCount: span.count) else { continue }
            for line in Array(data).split(separator: UInt8(ascii: "\n")) { contents.absorb(Array(line), count: false) }
        }
        contents.finished.seal()
        return contents
    }

    private func write(_ batch: ArraySlice<UInt8>, skipping here: ResultLogContents? = nil) throws {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(batch.count)
        for line in batch.split(separator: UInt8(ascii: "\n")) {
            let line = Array(line)
            if prior.alreadyHas(line) || here?.alreadyHas(line) == true { continue }
            if let (status, attempts) = DeliveryLine.statusAndAttempts(line) { tally.add(status, attempts: attempts) }
            bytes += line
            bytes.append(UInt8(ascii: "\n"))
        }
        log.append(line: bytes)
        if let failure = log.failure { throw RegistryError("result log: \(failure)") }
    }
}
