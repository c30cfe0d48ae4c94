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
    let requests: Bool

    func execute() -> SendRun.Result {
        let id = held.job.id
        var counts = CountedLines(prior)
        do {
            let body = String(decoding: try held.file.read(), as: UTF8.self)
            let jobLine = String(decoding: ResultRecord.job(held.job, file: held.name, receivedAt: held.receivedAt, pns: sendPlatforms,
                                                            targets: targets ?? 0).line(), as: UTF8.self)
            try queue.store.publish(id: id, body: body, jobLine: jobLine, targets: targets, requests: requests, devices: true)
        } catch {
            env.log.error("publishing it to the shared queue failed: \(RegistryError.detail(error))", [(.job, id)])
            return counts.result(interruption: .registry(RegistryError.detail(error)))
        }
        let progress = ProgressCheckpoint.url(in: env.spool, jobID: id)
        let tally = SendRun.Tally(prior)
        env.activity?.begin(Activity.Progress(id: id, targets: targets, finished: counts.finished, failed: prior.failed,
                                              finishedThisRun: 0, started: Date(), spreadOverSeconds: nil)) {
            tally.counts.withLock { ($0.finished, $0.failed) }
        }
        defer { env.activity?.end(id) }
        var seen = queue.wakeups.current
        var unreachable = false
        while true {
            if env.isStopping() { return counts.result(interruption: .stopping) }
            // A request made on this host reaches every host through the queue.
            if let local = env.controls?.request(for: id), queue.request(for: id) != local {
                _ = try? queue.store.steer(id, local)
                queue.refreshRequests()
            }
            do {
                guard let state = try queue.store.progress(id) else {
                    return counts.result(interruption: .registry("the job is no longer in the shared queue"))
                }
                if unreachable { env.log.info("the shared queue answers again", [(.job, id)]) }
                unreachable = false
                for chunk in state.unapplied {
                    try apply(chunk, &counts, tally)
                    try queue.store.markApplied(job: id, chunk: chunk)
                }
                ProgressCheckpoint(targets: targets, finished: counts.finished, delivered: counts.delivered, failed: counts.failed,
                                   unregistered: counts.unregistered, capped: counts.capped, updatedAt: Date())
                    .write(to: progress)
                if state.finished { return counts.result(interruption: nil) }
                if let control = state.control, state.leased == 0 {
                    switch control {
                    case .cancel:
                        // What the chunks let go had recorded is final too.
                        for chunk in try queue.store.unfinishedChunks(id) { try apply(chunk, &counts, tally) }
                        return counts.result(interruption: .cancelled)
                    case .pause:
                        // Kept here too, so the job stays paused across restarts of this host.
                        if env.controls?.request(for: id) != .pause { try? env.controls?.write(.pause, id: id) }
                        return counts.result(interruption: .paused)
                    }
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

    private var sendPlatforms: [Platform] {
        if case .send(let send) = held.job.kind { return send.platforms }
        return []
    }

    /// Writes one chunk's recorded lines into the result log (those a resumed run's log holds
    /// already, from a chunk written just before a crash, are left out).
    private func apply(_ chunk: Int, _ counts: inout CountedLines, _ tally: SendRun.Tally) throws {
        for batch in try queue.store.lines(job: held.job.id, chunk: chunk) {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(batch.utf8.count)
            for line in batch.utf8.split(separator: UInt8(ascii: "\n")) {
                let line = Array(line)
                if prior.alreadyHas(line) { continue }
                counts.add(line, tally)
                bytes += line
                bytes.append(UInt8(ascii: "\n"))
            }
            log.append(line: bytes)
            if let failure = log.failure { throw RegistryError("result log: \(failure)") }
        }
    }

    /// The log's counts as lines are written.
    struct CountedLines {
        var delivered: Int, failed: Int, unregistered: Int, retries: Int, capped: Int
        init(_ prior: ResultLogContents) {
            (delivered, failed, unregistered, retries, capped) = (prior.delivered, prior.failed, prior.unregistered, prior.retries, prior.capped)
        }
        var finished: Int { delivered + failed + unregistered + capped }

        mutating func add(_ line: [UInt8], _ tally: SendRun.Tally) {
            guard let (status, attempts) = Self.statusAndAttempts(line) else { return }
            switch status {
            case .delivered: delivered += 1
            case .failed: failed += 1
            case .unregistered: unregistered += 1
            case .capped: capped += 1
            }
            retries += max(0, attempts - 1)
            tally.add(TargetOutcome(status: status, attempts: attempts, result: ProviderResult(.delivered)))
        }

        private static let deliveryStart = Array(#"{"type":"delivery","#.utf8)
        private static let statusKey = Array(#","status":""#.utf8)
        private static let attemptsKey = Array(#"","attempts":"#.utf8)

        /// A delivery line's status and attempts. Every line of every chunk passes here on the
        /// origin, so a line laid out as `ResultRecord.Delivery.write` writes it is read from its
        /// bytes (its first `,"status":"` is that key: a quote inside a JSON string is escaped);
        /// any other line is parsed (a whole JSON tree per line was a fifth of the origin's CPU).
        static func statusAndAttempts(_ line: [UInt8]) -> (DeliveryStatus, Int)? {
            if line.starts(with: deliveryStart), var i = end(of: statusKey, in: line) {
                let start = i
                while i < line.count, line[i] != UInt8(ascii: "\"") { i += 1 }
                if let status = DeliveryStatus(rawValue: String(decoding: line[start..<i], as: UTF8.self)),
                   line[i...].starts(with: attemptsKey) {
                    i += attemptsKey.count
                    var attempts = 0, digits = 0
                    while i < line.count, digits < 9, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(line[i]) {
                        attempts = attempts * 10 + Int(line[i] - UInt8(ascii: "0"))
                        i += 1
                        digits += 1
                    }
                    if digits > 0 { return (status, attempts) }
                }
            }
            guard case .delivery(let d)? = ResultRecord(line: line) else { return nil }
            return (d.status, d.attempts)
        }

        /// Where `key` first ends in `line` (a plain loop: the generic `firstRange(of:)` cost as much as the parse).
        private static func end(of key: [UInt8], in line: [UInt8]) -> Int? {
            guard !key.isEmpty, key.count <= line.count else { return nil }
            var i = 0
            search: while i <= line.count - key.count {
                for j in 0..<key.count where line[i + j] != key[j] {
                    i += 1
                    continue search
                }
                return i + key.count
            }
            return nil
        }

        func result(interruption: StopReason?) -> SendRun.Result {
            SendRun.Result(delivered: delivered, failed: failed, unregistered: unregistered, retries: retries, capped: capped,
                           matched: finished, interruption: interruption)
        }
    }
}
