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
    let log: any OutcomeLog
    var prior: ResultLogContents
    /// Asked before each target whether to go on.
    let stop: StopSignal
    /// Where to keep the progress checkpoint `status` reads (nil: nowhere, a chunk of the shared
    /// queue: its origin keeps the job's), and the targets planned.
    let progress: (url: URL?, targets: Int?)
    /// A `local_time` wave: only these zones' devices, each zone read on its own, every one
    /// checked against the log's finished targets (no resume point: waves are not one pass).
    var zones: [ZoneKey]? = nil
    /// A chunk of the shared queue (`ChunkWorker`): only its devices, or only the job's hub,
    /// topic and channel requests; its outcomes go to the queue (no resume point: a chunk
    /// taken over goes on from the outcomes it recorded).
    var chunk: ChunkScope? = nil

    struct ChunkScope: Sendable {
        /// Devices with keys in `(after, last]`, unless `requests`.
        var after: Int64
        var last: Int64
        var requests: Bool
        /// How the chunk is named in progress lines.
        var label: String
        /// Told once its last devices are read (only they are left to hand out, then answers
        /// awaited), and again once every target is handed out: the next chunk starts meanwhile.
        var lastRead: @Sendable () -> Void = {}
    }

    final class Tally: Sendable {
        struct Counts {
            var delivered = 0, failed = 0, unregistered = 0, retries = 0, abandoned = 0, capped = 0
            /// Targets with a final outcome.
            var finished: Int { delivered + failed + unregistered + capped }
        }
        let counts: Mutex<Counts>
        init(_ prior: ResultLogContents) {
            counts = Mutex(Counts(delivered: prior.delivered, failed: prior.failed,
                                  unregistered: prior.unregistered, retries: prior.retries, capped: prior.capped))
        }
        func add(_ o: TargetOutcome) { add(o.status, attempts: o.attempts) }

        /// A batch of lines, as `OutcomeRecorder` counted them.
        func add(_ batch: LogPosition) {
            counts.withLock { c in
                c.delivered += batch.delivered
                c.failed += batch.failed
                c.unregistered += batch.unregistered
                c.capped += batch.capped
                c.retries += batch.retries
            }
        }

        func add(_ status: DeliveryStatus, attempts: Int) {
            var one = LogPosition(offset: 0)
            one.count(status, attempts: attempts)
            add(one)
        }
    }

    struct Result {
        var delivered = 0, failed = 0, unregistered = 0, retries = 0, capped = 0
        /// Registry devices the audience matched on the direct routes (nil: no direct route).
        var matched: Int?
        var interruption: StopReason?
    }

    func execute() -> Result {
        let tally = Tally(prior)
        // Where this run starts in the registry and the log (ResumeTracker): after the point it
        // resumes from, or from the start. Hub sends are not keyed: such a job keeps no point.
        let runStart = log.size
        let start = (zones == nil && chunk == nil ? prior.resumedFrom : nil)
            ?? ResumePoint(after: chunk?.after ?? 0, log: LogPosition(offset: prior.finished.count == 0 ? runStart : 0))
        let tracker = plan.hubSends.isEmpty && zones == nil && chunk == nil ? ResumeTracker(start: start, runStart: runStart) : nil
        let activity = env.activity, jobID = chunk?.label ?? job.id
        let finishedBefore = prior.delivered + prior.failed + prior.unregistered + prior.capped
        activity?.begin(Activity.Progress(id: jobID, targets: progress.targets, finished: finishedBefore, failed: prior.failed,
                                          finishedThisRun: 0, started: Date(), spreadOverSeconds: send.spreadOverSeconds)) {
            tally.counts.withLock { ($0.finished, $0.failed) }
        }
        defer { activity?.end(jobID) }
        let pruner = RegistryPruner(registry: env.registry, log: env.log, jobID: job.id,
                                    webhooks: env.webhooks.flatMap { $0.wants(.deviceUnregistered) ? $0 : nil })
        let recorder = OutcomeRecorder(log: log, events: env.log, pruner: pruner, label: job.id,
                                       start: LogPosition(offset: runStart, delivered: prior.delivered, failed: prior.failed,
                                                          unregistered: prior.unregistered, retries: prior.retries, capped: prior.capped))
        let location = env.registry.location
        let checkpoints = progress.url == nil ? nil
            : Checkpoints(run: self, tally: tally) { tracker.map { ($0.point(current: recorder.position), location) } }
        defer { checkpoints?.stop() }
        // What the producer hands out between two of its waits is written together at the next.
        let fanout = Fanout(tally: tally, recorder: recorder, tracker: tracker,
                            pacing: Pacing(spread: send.spreadOverSeconds, targets: progress.targets), handout: Handout(recorder: recorder))
        var cursor = Cursor(matched: start.matched)
        if zones == nil && chunk?.requests != false { sendToHubs(fanout) }
        if !plan.direct.isEmpty && chunk?.requests != true { sendToDevices(fanout, after: start.after, &cursor) }
        fanout.handout.release()
        chunk?.lastRead()
        fanout.inFlight.wait()
        pruner.finish()
        let c = tally.counts.withLock { $0 }
        // A target left unsent by a stop keeps the job in active/ for the resume.
        if cursor.interruption == nil && c.abandoned > 0 { cursor.interruption = stop.reason ?? .stopping }
        return Result(delivered: c.delivered, failed: c.failed, unregistered: c.unregistered, retries: c.retries, capped: c.capped,
                      matched: plan.direct.isEmpty ? nil : cursor.matched, interruption: cursor.interruption)
    }

    /// What every target of one run shares.
    struct Fanout {
        let tally: Tally
        let inFlight = DispatchGroup()
        let recorder: OutcomeRecorder
        let tracker: ResumeTracker?
        let pacing: Pacing
        /// What the producer holds until its next wait.
        let handout: Handout
    }

    /// Where the producer is: devices the audience matched so far, targets sent in this run, and
    /// why it stopped early if it did.
    struct Cursor {
        var matched: Int
        var sentThisRun = 0
        var interruption: StopReason?
    }

    /// One send per hub request the plan holds (the hub resolves the audience), unless final already.
    private func sendToHubs(_ fanout: Fanout) {
        for hubSend in plan.hubSends {
            let recipient = Recipient.hub(hubSend.audience)
            if prior.finished.contains(platform: hubSend.platform, recipient: recipient, app: hubSend.app) { continue }
            dispatch(platform: hubSend.platform, app: hubSend.app, via: hubSend.state, recipient: recipient,
                     notification: hubSend.notification, fanout: fanout, ticket: nil)
        }
    }

    /// Streams the audience's devices from the registry (after the resume point) and sends to each.
    /// A capped job's devices go through its `CapGate` a batch at a time, in registry order.
    private func sendToDevices(_ fanout: Fanout, after: Int64, _ cursor: inout Cursor) {
        let uniform = plan.uniform
        let gate = CapGate(send: send, jobID: job.id, apps: env.apps, registry: env.registry)
        gate?.prune(log: env.log)
        func step(_ device: Device, _ key: Int64, capped: Bool) -> Bool {
            // A platform this device's app sends through its hub: the hub send covers it.
            guard uniform || plan.sendsDirect(device) else {
                fanout.tracker?.passed(key: key)
                return true
            }
            return offer(device, key: key, fanout, &cursor, capped: capped)
        }
        // A batch is offered once its reservation is made; the next one is reserved meanwhile.
        var held: [(device: Device, key: Int64)] = []
        var ahead: (batch: [(device: Device, key: Int64)], reservation: CapGate.Ahead)?
        // Offers the batch reserved before; false: stop producing.
        func offerReserved() -> Bool {
            guard let (batch, reservation) = ahead else { return true }
            ahead = nil
            fanout.handout.release()
            switch reservation.wait() {
            case .failure(let error):
                cursor.interruption = .registry(RegistryError.detail(error))
                env.log.error("counting frequency caps in the registry failed: \(RegistryError.detail(error))", [(.job, job.id)])
                return false
            case .success(let over):
                for d in batch where !step(d.device, d.key, capped: over.contains(d.key)) { return false }
                // The capped lines are held: written (and their memory freed) each batch.
                fanout.handout.release()
                return true
            }
        }
        // Starts reserving the held devices still to send, then offers the batch before.
        func release(_ gate: CapGate) -> Bool {
            let batch = held
            held.removeAll(keepingCapacity: true)
            let reservation = CapGate.Ahead(gate, batch.filter { d in
                (uniform || plan.sendsDirect(d.device)) && !prior.finished.contains(platform: d.device.platform, recipient: .device(d.device))
            })
            let going = offerReserved()
            ahead = (batch, reservation)
            return going
        }
        do {
            var going = true
            let last = chunk?.last ?? .max
            func each(_ device: Device, _ key: Int64) -> Bool {
                if key > last { return false }      // past its chunk
                guard let gate else { return step(device, key, capped: false) }
                held.append((device, key))
                if held.count >= CapGate.batchSize { going = release(gate) }
                return going
            }
            let tokenKind = send.message.native.tokenKind
            if let zones {
                for zone in zones where cursor.interruption == nil && going {
                    try env.registry.forEach(platforms: Set(plan.direct), zone: zone, tokenKind: tokenKind,
                                             matching: send.audience.tagExpression, pageSize: 1000, after: 0, each)
                }
            } else {
                try env.registry.forEach(platforms: Set(plan.direct), apps: plan.directApps, tokenKind: tokenKind,
                                         matching: send.audience.tagExpression, after: after, through: last, lastPage: { chunk?.lastRead() }, each)
            }
            if let gate, going, !held.isEmpty { going = release(gate) }
            if going { _ = offerReserved() }
        } catch {
            cursor.interruption = .registry(RegistryError.detail(error))
            env.log.error("reading the registry failed: \(RegistryError.detail(error))", [(.job, job.id)])
        }
        // A reservation still running when the job stopped: done before the registry is let go.
        if let (_, reservation) = ahead {
            fanout.handout.release()
            _ = reservation.wait()
        }
    }

    /// Sends to one device unless the log already has its outcome; false: stop producing.
    /// `capped`: over its frequency cap, it gets its final `capped` line instead of a send.
    private func offer(_ device: Device, key: Int64, _ fanout: Fanout, _ cursor: inout Cursor, capped: Bool = false) -> Bool {
        if let why = stop.reason {
            cursor.interruption = why
            return false
        }
        // Unlogged deliveries would be sent again on resume: stop while the log cannot be
        // written (full disk) and leave the job to be resumed.
        if let failure = log.failure {
            cursor.interruption = .resultLog("result log: \(failure)")
            return false
        }
        cursor.matched += 1
        let recipient = Recipient.device(device)
        if prior.finished.contains(platform: device.platform, recipient: recipient) {
            fanout.tracker?.passed(key: key)
            return true
        }
        if capped {
            recordCapped(device, key: key, fanout)
            return true
        }
        // Pacing: the i-th target sent in this run goes at start + i × window / targets (a
        // resumed job goes on at the same pace, without waiting for what it sent before).
        if let due = fanout.pacing.due(cursor.sentThisRun) {
            fanout.handout.release()
            if !RateLimiter.wait(until: due, halted: { stop.isHalted }) {
                cursor.interruption = stop.reason ?? .stopping
                return false
            }
        }
        guard var notification = plan.renditions[device.platform]?.notification(for: device.lang),
              let route = env.apps.apps[device.app], let state = route.routes[device.platform] else {
            fanout.tracker?.passed(key: key)
            return true
        }
        if let tagger = plan.tagger { notification = tagger.stamp(notification, for: device, key: key) }
        // The app's own rate cap (`apps.<id>.max_per_second`), on top of its provider's.
        if let limiter = route.limiter {
            let due = limiter.reserve()
            if due > Date().timeIntervalSince1970 {
                fanout.handout.release()
                if !RateLimiter.wait(until: due, halted: { stop.isHalted }) {
                    cursor.interruption = stop.reason ?? .stopping
                    return false
                }
            }
        }
        cursor.sentThisRun += 1
        let ticket = fanout.tracker.map { (tracker: $0, number: $0.handedOut(key: key, at: fanout.recorder.position)) }
        dispatch(platform: device.platform, app: device.app, via: state, recipient: recipient, notification: notification,
                 fanout: fanout, ticket: ticket)
        return true
    }

    /// `spread_over_seconds`: the i-th target of n is due at start + i × window / n, so the job
    /// sends evenly over the window without holding its targets in memory.
    struct Pacing {
        let start = Date().timeIntervalSince1970
        let step: Double?

        init(spread: Int?, targets: Int?) {
            guard let spread, let targets, targets > 1 else { step = nil; return }
            step = Double(spread) / Double(targets)
        }

        func due(_ index: Int) -> Double? {
            guard let step, index > 0 else { return nil }
            let at = start + Double(index) * step
            return at > Date().timeIntervalSince1970 ? at : nil
        }
    }

    /// Rewrites the progress checkpoint once a second while the job sends; after `stop()`
    /// returns, nothing writes it again (the runner removes it).
    final class Checkpoints: @unchecked Sendable {   // the timer is only touched in init and stop
        private let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        private let stopped = Mutex(false)
        /// The rate since the previous checkpoint (about a second).
        private let rate = Mutex(RateEstimator(window: 0, minimumSpan: 0.2))

        /// `resume`: the run's resume point and its registry's location, written with each checkpoint.
        init(run: SendRun, tally: Tally, resume: @escaping @Sendable () -> (ResumePoint, String)?) {
            timer.schedule(deadline: .now(), repeating: 1, leeway: .milliseconds(200))
            timer.setEventHandler { [self] in
                stopped.withLock { done in
                    guard !done else { return }
                    let now = Date().timeIntervalSince1970
                    let finished = tally.counts.withLock { $0.finished }
                    let perSecond = rate.withLock { $0.sample(at: now, count: finished); return $0.rate }
                    run.writeCheckpoint(tally, rate: perSecond, resume: resume())
                }
            }
            timer.resume()
        }

        func stop() {
            stopped.withLock { $0 = true }
            timer.cancel()
        }
    }

    func writeCheckpoint(_ tally: Tally, rate: Double?, resume: (ResumePoint, String)?) {
        guard let url = progress.url else { return }
        let c = tally.counts.withLock { $0 }
        ProgressCheckpoint(targets: progress.targets, finished: c.finished,
                           delivered: c.delivered, failed: c.failed, unregistered: c.unregistered, capped: c.capped, updatedAt: Date(),
                           rate: rate, spreadOverSeconds: send.spreadOverSeconds, resume: resume.map { (point: $0.0, registry: $0.1) })
            .write(to: url)
    }

    /// A device over its frequency cap: its `capped` line, counted like any final outcome, unsent.
    private func recordCapped(_ device: Device, key: Int64, _ fanout: Fanout) {
        let ticket = fanout.tracker.map { (tracker: $0, number: $0.handedOut(key: key, at: fanout.recorder.position)) }
        let provider = env.apps.state(app: device.app, platform: device.platform)?.name ?? "sandbox"
        let reason = CapGate.reason(env.apps.apps[device.app]?.frequencyCap)
        let outcome = TargetOutcome(status: .capped, attempts: 0, result: ProviderResult(.rejected, reason: reason))
        let tally = fanout.tally, group = fanout.inFlight, metrics = env.metrics
        group.enter()
        fanout.handout.record(OutcomeRecorder.Entry(platform: device.platform, provider: provider, recipient: .device(device), outcome: outcome) {
            tally.add(outcome)
            if let ticket { ticket.tracker.finished(ticket.number) }
            metrics?.delivery(platform: device.platform.rawValue, provider: provider, status: outcome.status.rawValue, app: device.app)
            group.leave()
        })
    }

    private func dispatch(platform: Platform, app: String, via state: ProviderState, recipient: Recipient,
                          notification: RenderedNotification, fanout: Fanout, ticket: (tracker: ResumeTracker, number: Int)?) {
        let tally = fanout.tally, group = fanout.inFlight, recorder = fanout.recorder, stop = stop
        let request = SendRequest(jobID: job.id, platform: platform, recipient: recipient, notification: notification, app: app)
        let metrics = env.metrics
        group.enter()
        env.pool.submit(request, via: state, isStopping: { stop.isHalted }, handout: fanout.handout) { end, release in
            // Left for the resumed job: not final, not logged, not counted.
            guard case .final(let outcome) = end else {
                tally.counts.withLock { $0.abandoned += 1 }
                release()
                return group.leave()
            }
            recorder.record(OutcomeRecorder.Entry(platform: platform, provider: state.name, app: app, recipient: recipient, outcome: outcome) {
                tally.add(outcome)
                if let ticket { ticket.tracker.finished(ticket.number) }
                metrics?.delivery(platform: platform.rawValue, provider: state.name, status: outcome.status.rawValue, app: app)
                release()
                group.leave()
            })
        }
    }
}
