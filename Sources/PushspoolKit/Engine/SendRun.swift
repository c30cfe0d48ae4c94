import Dispatch
import Foundation
import PushspoolCore
import Synchronization

/// The fan-out of one send job: streams targets from the registry (bounded memory: the pool's
/// slots block the producer), sends each through its platform's provider, prunes gone devices
/// and appends one delivery line per target as it reaches its final outcome.
struct SendRun {
    let services: SendServices
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
    /// Which of the job's targets this run sends (which of its three callers runs it).
    var scope: Scope = .job

    enum Scope {
        /// The whole job (`SendExecutor`): its hub requests, then its devices from the point it
        /// resumes from.
        case job
        /// A `local_time` wave (`LocalTimeRun`): only these zones' devices, each zone read on its
        /// own, every one checked against the log's finished targets (no resume point: waves are
        /// not one pass).
        case wave([ZoneKey])
        /// A chunk of the shared queue (`ChunkWorker`): only its devices, or only the job's hub,
        /// topic and channel requests; its outcomes go to the queue (no resume point: a chunk
        /// taken over goes on from the outcomes it recorded).
        case chunk(ChunkScope)

        var chunk: ChunkScope? {
            if case .chunk(let c) = self { return c }
            return nil
        }
        /// Whether a resume point is kept and used: only a whole job's devices are one pass.
        var resumes: Bool {
            if case .job = self { return true }
            return false
        }
        var sendsHubRequests: Bool {
            switch self {
            case .job: return true
            case .wave: return false
            case .chunk(let c): return c.requests
            }
        }
        var sendsDevices: Bool { chunk?.requests != true }
    }

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
        let chunk = scope.chunk
        let start = (scope.resumes ? prior.resumedFrom : nil)
            ?? ResumePoint(after: chunk?.after ?? 0, log: LogPosition(offset: prior.finished.count == 0 ? runStart : 0))
        let tracker = plan.hubSends.isEmpty && scope.resumes ? ResumeTracker(start: start, runStart: runStart) : nil
        let activity = services.activity, jobID = chunk?.label ?? job.id
        let finishedBefore = prior.delivered + prior.failed + prior.unregistered + prior.capped
        activity?.begin(Activity.Progress(id: jobID, targets: progress.targets, finished: finishedBefore, failed: prior.failed,
                                          finishedThisRun: 0, started: services.clock.wall(), spreadOverSeconds: send.spreadOverSeconds)) {
            tally.counts.withLock { ($0.finished, $0.failed) }
        }
        defer { activity?.end(jobID) }
        let pruner = RegistryPruner(registry: services.registry, log: services.log, jobID: job.id,
                                    webhooks: services.webhooks.flatMap { $0.wants(.deviceUnregistered) ? $0 : nil }, clock: services.clock)
        let recorder = OutcomeRecorder(log: log, events: services.log, pruner: pruner, label: job.id,
                                       start: LogPosition(offset: runStart, delivered: prior.delivered, failed: prior.failed,
                                                          unregistered: prior.unregistered, retries: prior.retries, capped: prior.capped),
                                       clock: services.clock)
        let location = services.registry.location
        let checkpoints = progress.url == nil ? nil
            : Checkpoints(run: self, tally: tally) { tracker.map { ($0.point(current: recorder.position), location) } }
        defer { checkpoints?.stop() }
        // What the producer hands out between two of its waits is written together at the next.
        let stop = stop
        let handout = Handout(recorder: recorder)
        let fanout = Fanout(outcomes: OutcomeStage(tally: tally, recorder: recorder, tracker: tracker, metrics: services.metrics),
                            pacing: SendPacing(spread: send.spreadOverSeconds, targets: progress.targets, start: services.clock.uptime()),
                            handout: handout, wait: ProducerWait(handout: handout, halted: { stop.isHalted }))
        var cursor = Cursor(matched: start.matched)
        if scope.sendsHubRequests { sendToHubs(fanout) }
        if !plan.direct.isEmpty && scope.sendsDevices { sendToDevices(fanout, after: start.after, &cursor) }
        fanout.wait.release()
        chunk?.lastRead()
        fanout.outcomes.wait()
        pruner.finish()
        let c = tally.counts.withLock { $0 }
        // A target left unsent by a stop keeps the job in active/ for the resume.
        if cursor.interruption == nil && c.abandoned > 0 { cursor.interruption = stop.reason ?? .stopping }
        return Result(delivered: c.delivered, failed: c.failed, unregistered: c.unregistered, retries: c.retries, capped: c.capped,
                      matched: plan.direct.isEmpty ? nil : cursor.matched, interruption: cursor.interruption)
    }

    /// The stages every target of one run shares, after the audience and the cap gate.
    struct Fanout {
        let outcomes: OutcomeStage
        let pacing: SendPacing
        /// What the producer holds until its next wait.
        let handout: Handout
        /// How the producer waits (the rate wait): its `Handout` released first.
        let wait: ProducerWait
        var tracker: ResumeTracker? { outcomes.tracker }
    }

    /// Where the producer is: devices the audience matched so far, targets sent in this run, and
    /// why it stopped early if it did.
    struct Cursor {
        var matched: Int
        var sentThisRun = 0
        var interruption: StopReason?
        /// The devices' platforms and apps resolved so far.
        var routes = RouteCache()
    }

    /// One send per hub request the plan holds (the hub resolves the audience), unless final already.
    private func sendToHubs(_ fanout: Fanout) {
        for hubSend in plan.hubSends {
            let recipient = Recipient.hub(hubSend.audience)
            if prior.finished.contains(platform: hubSend.platform, recipient: recipient, app: hubSend.app) { continue }
            let target = fanout.outcomes.handOut(platform: hubSend.platform, provider: hubSend.state.name, app: hubSend.app,
                                                 recipient: recipient, key: nil)
            dispatch(target, via: hubSend.state, notification: hubSend.notification, fanout: fanout)
        }
    }

    /// Streams the audience's devices from the registry (after the resume point) and sends to each.
    /// A capped job's devices go through its cap gate (`CapStage`) a batch at a time, in registry order.
    private func sendToDevices(_ fanout: Fanout, after: Int64, _ cursor: inout Cursor) {
        let uniform = plan.uniform
        // A platform a device's app sends through its hub: the hub send covers it.
        func direct(_ device: Device) -> Bool { uniform || plan.sendsDirect(device) }
        func step(_ device: Device, _ key: Int64, capped: Bool) -> Bool {
            guard direct(device) else {
                fanout.tracker?.passed(key: key)
                return true
            }
            return offer(device, key: key, fanout, &cursor, capped: capped)
        }
        let caps = CapGate(send: send, jobID: job.id, apps: services.apps, registry: services.registry, clock: services.clock).map { gate in
            gate.prune(log: services.log)
            return CapStage(gate: gate, toSend: { d in direct(d) && !prior.finished.contains(platform: d.platform, recipient: .device(d)) },
                            wait: fanout.wait)
        }
        // A reservation still running when the job stopped: done before the registry is let go.
        defer { caps?.close() }
        do {
            let chunk = scope.chunk
            let last = chunk?.last ?? .max
            // false once a stage said to stop (not at the end of the chunk's devices).
            var going = true
            func each(_ device: Device, _ key: Int64) -> Bool {
                if key > last { return false }      // past its chunk
                going = caps.map { $0.offer(device, key: key, then: step) } ?? step(device, key, capped: false)
                return going
            }
            let tokenKind = send.message.native.tokenKind
            if case .wave(let zones) = scope {
                for zone in zones where cursor.interruption == nil && going {
                    try services.registry.forEach(platforms: Set(plan.direct), zone: zone, tokenKind: tokenKind,
                                             matching: send.audience.tagExpression, pageSize: 1000, after: 0, each)
                }
            } else {
                try services.registry.forEach(platforms: Set(plan.direct), apps: plan.directApps, tokenKind: tokenKind,
                                         matching: send.audience.tagExpression, after: after, through: last, lastPage: { chunk?.lastRead() }, each)
            }
            if let caps, going { _ = caps.finish(then: step) }
        } catch {
            cursor.interruption = .registry(RegistryError.detail(error))
            services.log.error("reading the registry failed: \(RegistryError.detail(error))", [(.job, job.id)])
        }
        if let failure = caps?.failure {
            cursor.interruption = .registry(RegistryError.detail(failure))
            services.log.error("counting frequency caps in the registry failed: \(RegistryError.detail(failure))", [(.job, job.id)])
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
        // resumed job goes on at the same pace, without waiting for what it sent before). On
        // the monotonic clock, as the wait is; read only when the job is paced.
        if fanout.pacing.step != nil, let due = fanout.pacing.due(cursor.sentThisRun, now: services.clock.uptime()), !fanout.wait.until(due) {
            cursor.interruption = stop.reason ?? .stopping
            return false
        }
        let route = cursor.routes.route(device.platform, app: device.app, plan: plan, apps: services.apps)
        guard var notification = route.rendition?.notification(for: device.lang), let state = route.state else {
            fanout.tracker?.passed(key: key)
            return true
        }
        if let tagger = plan.tagger { notification = tagger.stamp(notification, for: device, key: key) }
        // The app's own rate cap (`apps.<id>.max_per_second`), on top of its provider's.
        if let limiter = route.limiter, !fanout.wait.until(limiter.reserve()) {
            cursor.interruption = stop.reason ?? .stopping
            return false
        }
        cursor.sentThisRun += 1
        let target = fanout.outcomes.handOut(platform: device.platform, provider: state.name, app: device.app, recipient: recipient, key: key)
        dispatch(target, via: state, notification: notification, fanout: fanout)
        return true
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
                    let now = Uptime.seconds   // a span: the monotonic clock
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
                           delivered: c.delivered, failed: c.failed, unregistered: c.unregistered, capped: c.capped, updatedAt: services.clock.wall(),
                           rate: rate, spreadOverSeconds: send.spreadOverSeconds, resume: resume.map { (point: $0.0, registry: $0.1) })
            .write(to: url)
    }

    /// A device over its frequency cap: its `capped` line, counted like any final outcome, unsent.
    private func recordCapped(_ device: Device, key: Int64, _ fanout: Fanout) {
        let provider = services.apps.state(app: device.app, platform: device.platform)?.name ?? "sandbox"
        let reason = CapGate.reason(services.apps.apps[device.app]?.frequencyCap)
        let outcome = TargetOutcome(status: .capped, attempts: 0, result: ProviderResult(.rejected, reason: reason))
        let target = fanout.outcomes.handOut(platform: device.platform, provider: provider, app: device.app, recipient: .device(device), key: key)
        fanout.handout.record(fanout.outcomes.entry(target, outcome))
    }

    /// The provider stage: the target goes to the worker pool (its provider's slots, quiet time,
    /// rate cap and retries), and its end to the outcome stage.
    private func dispatch(_ target: OutcomeStage.Target, via state: ProviderState, notification: RenderedNotification, fanout: Fanout) {
        let outcomes = fanout.outcomes
        let request = SendRequest(jobID: job.id, platform: target.platform, recipient: target.recipient, notification: notification, app: target.app)
        services.pool.submit(request, via: state, wait: fanout.wait) { end, release in
            // Left for the resumed job: not final, not logged, not counted.
            guard case .final(let outcome) = end else {
                release()
                return outcomes.abandoned(target)
            }
            outcomes.recorder.record(outcomes.entry(target, outcome, release: release))
        }
    }
}
