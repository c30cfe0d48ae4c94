import Dispatch
import Foundation
import PushspoolCore
import Synchronization

/// This host's hands on the shared queue: it cuts jobs' audiences into chunks and claims at most
/// `queue.max_chunks` chunks at once, each sent by a `SendRun` with its outcomes going to the
/// queue, then completed (or, stopped, paused or cancelled, let go for any host to take).
///
/// Scheduling, all on Dispatch: claims, cuts' ends and chunks' ends are serialised on `control`;
/// each chunk sent, each cut and each purge is a work item (`run(_:)`) on Dispatch's pool of
/// threads, reused from one chunk to the next (no thread is made per chunk); the listener is one
/// long work item of its own. The chunks in progress are bounded by their slots (`ChunkSlots`:
/// `max_chunks`, one of them reading its devices at a time), and every waiter sleeps until its
/// next event: a claim waits for a notification, a slot freed (a chunk's last devices read, or
/// its end), or the `alarm`, armed for the one time that tells no one, when the earliest lease
/// another host holds runs out. Idle, it makes no statement at all: its
/// presence is a lock its listening connection holds. Leases are renewed every third of a lease
/// while it holds chunks (a timer on `leases`); a host that cannot renew for a whole lease
/// (partitioned from the database) stops sending, since its chunks go on elsewhere. Its spans are
/// on the monotonic clock (`Uptime`), its leases on the database's.
final class ChunkWorker: Sendable {
    /// A chunk this host holds, whether it lost it, and whether its targets are all handed out.
    final class Held: Sendable {
        let chunk: PostgresJobQueue.Chunk
        private let lost = Atomic<Bool>(false)
        private let reading = Atomic<Bool>(true)
        init(_ chunk: PostgresJobQueue.Chunk) { self.chunk = chunk }
        var isLost: Bool { lost.load(ordering: .acquiring) }
        func lose() {
            if !lost.exchange(true, ordering: .acquiringAndReleasing) { StopBell.shared.ring() }
        }
        /// Still reading its devices (the next chunk is taken once the last of them are read).
        var isReading: Bool { reading.load(ordering: .acquiring) }
        /// True the first time: the chunk's devices are all read.
        func readAll() -> Bool { reading.exchange(false, ordering: .acquiringAndReleasing) }
    }

    private let queue: SharedQueue
    private let env: JobRunner.Environment
    private let outcomes: OutcomeWriter
    private let control = DispatchQueue(label: "pushspool.chunks")
    /// The renewal timer's own queue: a lease that lapses can record nothing more
    /// (`ChunkLease`), so a renewal never waits behind claims and cuts on `control`.
    private let leases = DispatchQueue(label: "pushspool.chunk-leases")
    /// Every work item (and the listener), for `wait()`.
    private let running = DispatchGroup()
    private let listener: QueueListener
    /// Wakes `claimMore` when a lease another host holds runs out, a skipped job may be tried
    /// again, or (the database away) to try again.
    private let alarm: QueueAlarm
    private let retention: QueueRetention

    private struct State {
        var held: [String: Held] = [:]
        var cutting = false
        var started = false
        /// Jobs this host cannot send (its config lacks their app or provider), until then
        /// (`Uptime`).
        var skip: [String: Double] = [:]
        var lastRenewed = Uptime.seconds
        var rate = RateEstimator(window: 10, minimumSpan: 1)
        /// Armed while this host holds chunks (and for one more report after the last).
        var renewer: (any DispatchSourceTimer)?
        var unreachableSince: Double?
    }
    private let state = Mutex(State())
    private let stopFlag = Atomic<Bool>(false)
    /// Set while the database cannot be reached: chunks in hand stop (what they send could not
    /// be recorded), and none is claimed.
    private let databaseAway = Atomic<Bool>(false)
    /// Outcomes this host recorded, for its rate in `status`.
    private let sent = Atomic<Int64>(0)

    /// `run --once` (cron) sends chunks of the jobs its own spool accepted only: it exits when
    /// they are done, so it would take other hosts' chunks only to let them go again.
    private let ownOnly = Atomic<Bool>(false)

    init(queue: SharedQueue, env: JobRunner.Environment) {
        self.queue = queue
        self.env = env
        outcomes = OutcomeWriter(store: queue.store)
        listener = QueueListener(pool: queue.store.pool, presence: queue.store.host)
        alarm = QueueAlarm(queue: control)
        let running = running
        retention = QueueRetention(queue: queue, log: env.log, control: control, isStopping: env.isStopping,
                                   background: { body in Self.run(in: running, body) })
        alarm.onFire { [weak self] in self?.claimMore() }
    }

    private var lease: Double { Double(queue.config.leaseSeconds) }

    func start(ownJobsOnly: Bool = false) {
        ownOnly.store(ownJobsOnly, ordering: .releasing)
        let first = state.withLock { s -> Bool in
            defer { s.started = true }
            return !s.started
        }
        guard first else { return }
        // The listener sleeps in poll(2) for as long as the host runs: one long work item.
        Self.run(in: running) { [self] in
            listener.listen { payload in
                // nil: (re)connected, when anything may have been missed.
                let kind = payload.map { String($0.prefix { $0 != " " }) }
                if kind == nil || kind == "control" { refreshRequests() }
                if kind == nil || kind == "pause" { applySharedPauses() }
                // Origins wait for chunks to complete and for steering; claims, for chunks to take.
                if kind != "ready" { queue.wakeups.signal() }
                if kind == nil || ["ready", "released", "control"].contains(kind!) { poke() }
                if kind == "ended" { retention.jobEnded() }
            }
        }
        queue.refreshRequests()
        // This host's first report: `status` lists it from now on.
        control.async { [self] in
            try? queue.store.report(chunks: 0, sent: sent.load(ordering: .relaxed), rate: 0)
            claimMore()
        }
        retention.purgeIfDue()
    }

    /// Renews every third of a lease from now on, until it holds no chunk (`renew`).
    private func renewWhileHolding(_ s: inout State) {
        guard s.renewer == nil, !isStopping else { return }
        let every = lease / 3
        let timer = DispatchSource.makeTimerSource(queue: leases)
        timer.schedule(deadline: .now() + every, repeating: every, leeway: .milliseconds(100))
        timer.setEventHandler { [weak self] in self?.renew() }
        timer.resume()
        s.renewer = timer
    }

    /// Stops claiming; chunks in hand stop producing, finish what is in flight and are let go.
    func stop() {
        stopFlag.store(true, ordering: .releasing)
        state.withLock { s in
            s.renewer?.cancel()
            s.renewer = nil
        }
        alarm.cancel()
        retention.stop()
        // Wakes the listener and the origins following their jobs (`QueuedSend`) at once.
        listener.stop()
        queue.wakeups.signal()
        StopBell.shared.ring()
    }

    /// Waits for every chunk, cut and purge in progress (and the listener) after `stop()`.
    func wait() { running.wait() }

    private var isStopping: Bool { stopFlag.load(ordering: .acquiring) || env.isStopping() }

    /// Claims what there is room for, and takes a job's cut when no host cuts it.
    func poke() {
        control.async { [self] in claimMore() }
    }

    private func claimMore() {
        guard !isStopping else { return }
        let now = Uptime.seconds
        // One chunk at a time reads, up to `max_chunks` in progress (`ChunkSlots`).
        let (room, skip, cutting, skipEnds) = state.withLock { s in
            s.skip = s.skip.filter { $0.value > now }
            let slots = ChunkSlots(max: queue.config.maxChunks, held: s.held.count,
                                   reading: s.held.values.contains { $0.isReading && !$0.isLost })
            return (slots.room, Array(s.skip.keys), s.cutting, s.skip.values.min())
        }
        do {
            let own = ownOnly.load(ordering: .acquiring)
            if !cutting, let cut = try queue.store.claimCut(lease: lease, ownOnly: own) {
                state.withLock { $0.cutting = true }
                run { [self] in runCut(cut) }
            }
            var claimed = 0
            if room > 0 {
                for chunk in try queue.store.claim(count: room, lease: lease, excluding: skip, ownOnly: own) {
                    claimed += 1
                    let held = Held(chunk)
                    state.withLock { s in
                        s.held[PostgresJobQueue.key(chunk.job, chunk.number)] = held
                        renewWhileHolding(&s)
                    }
                    run { [self] in runChunk(held) }
                }
            }
            // Nothing tells when another host's lease runs out, or a skipped job may be tried
            // again, or a chunk left with room for it is let go by a lock (a host cut off in the
            // middle of a transaction on its row, until the server ends that session): the
            // alarm does.
            let locked = try claimed < room && queue.store.claimableButLocked(excluding: skip, ownOnly: own)
            let look = ChunkSlots.nextLook(lapse: try queue.store.nextLapse(ownOnly: own), skipEnds: skipEnds.map { $0 - now })
            if let next = [look, locked ? queue.fallbackSeconds : nil].compactMap({ $0 }).min() {
                alarm.wake(in: next)
            }
            noteReachable()
        } catch {
            noteUnreachable(error)
            alarm.wake(in: queue.fallbackSeconds)
        }
    }

    /// A chunk or a cut, as a work item: it holds one of Dispatch's threads while it reads and
    /// sends (`SendRun` blocks on the pool's slots and its answers), and gives it back after.
    private func run(_ body: @escaping @Sendable () -> Void) { Self.run(in: running, body) }

    /// Runs `body` on a serial queue of its own, which Dispatch runs on a thread of its pool
    /// (an idle one, or one more while all are busy), never on a thread made for it: a serial
    /// queue's work item starts at once, where a concurrent queue's could wait for one of the
    /// threads Dispatch keeps for such queues (about as many as the cores), which blocked chunks
    /// may all be holding.
    private static func run(in running: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
        DispatchQueue(label: "pushspool.chunk-work").async(group: running, execute: body)
    }

    // MARK: Cutting

    /// Cuts a job's audience into chunks as it reads it, each one claimable as soon as it is cut.
    private func runCut(_ claimed: PostgresJobQueue.Cut) {
        defer {
            state.withLock { $0.cutting = false }
            poke()
        }
        var cut = claimed
        do {
            guard let (_, send, plan) = try loadJob(cut.job) else { return }
            let tokenKind = send.message.native.tokenKind
            while !isStopping, queue.request(for: cut.job) == nil {
                let end = try queue.registry.chunkEnd(platforms: Set(plan.direct), apps: plan.directApps, tokenKind: tokenKind,
                                                      matching: send.audience.tagExpression, after: cut.after, size: queue.config.chunkSize)
                guard try queue.store.addChunk(&cut, last: end, lease: lease), end != nil else { return }
            }
        } catch {
            env.log.error("cutting its audience into chunks failed: \(RegistryError.detail(error)); another look in \(Int(queue.fallbackSeconds)) s",
                          [(.job, cut.job)])
        }
    }

    // MARK: Sending

    /// The job a chunk belongs to, parsed and planned; nil (logged, and the job skipped here
    /// for a while) when this host cannot send it.
    private func loadJob(_ id: String) throws -> (Job, SendJob, SendPlan)? {
        guard let row = try queue.store.job(id) else { return nil }
        let problem: String
        do {
            let job = try JobParser.parse(Array(row.body.utf8), fileName: id + ".json")
            guard case .send(let send) = job.kind else { return nil }
            switch SendPlan.prepare(job, send, env: env) {
            case .success(let plan): return (job, send, plan)
            case .failure(let why): problem = why.description
            }
        } catch {
            problem = "\(error)"
        }
        env.log.error("this host cannot send its chunks (\(problem)); left to other hosts for a minute", [(.job, id)])
        state.withLock { $0.skip[id] = Uptime.seconds + 60 }
        return nil
    }

    private func runChunk(_ held: Held) {
        let chunk = held.chunk
        defer {
            // Only this claim's entry: the chunk, lost, may have been claimed again meanwhile.
            state.withLock { s in
                let key = PostgresJobQueue.key(chunk.job, chunk.number)
                if s.held[key] === held { s.held[key] = nil }
            }
            poke()
        }
        do {
            guard let (job, send, plan) = try loadJob(chunk.job) else {
                try? queue.store.release(chunk)
                return
            }
            TakeOver.announce(chunk, log: env.log)
            // Outcomes recorded before it was taken over (or let go): those targets are final.
            var prior = ResultLogContents()
            try queue.store.forEachBatch(job: chunk.job, chunk: chunk.number) { batch in
                for line in batch.utf8.split(separator: UInt8(ascii: "\n")) { prior.absorb(Array(line)) }
            }
            prior.finished.seal()
            let worker = self
            let sink = ChunkOutcomeLog(writer: outcomes, chunk: chunk, held: held, origin: { [queue] in queue.originLog(for: chunk.job) },
                                       recorded: { n in worker.sent.add(Int64(n), ordering: .relaxed) },
                                       unreachable: { worker.noteUnreachable($0) })
            let queue = queue
            let stop = StopSignal(isStopping: {
                held.isLost || worker.isStopping || worker.databaseAway.load(ordering: .acquiring) || queue.request(for: chunk.job) != nil
            },
                                  controls: nil, jobID: job.id)
            let label = "\(job.id) chunk \(chunk.number)"
            let scope = SendRun.ChunkScope(after: chunk.after, last: chunk.last, requests: chunk.requests, label: label) {
                if held.readAll() { worker.poke() }
            }
            // No progress checkpoint: the job's origin keeps the job's.
            var run = SendRun(services: env.sending, job: job, send: send, plan: plan, log: sink, prior: prior, stop: stop, progress: (nil, nil))
            run.scope = .chunk(scope)
            let result = run.execute()
            if result.interruption == nil, sink.failure == nil, !held.isLost {
                _ = try queue.store.complete(chunk)
            } else if !held.isLost {
                try queue.store.release(chunk)
            }
        } catch {
            env.log.error("chunk \(chunk.number): \(RegistryError.detail(error)); left for its lease to run out", [(.job, chunk.job)])
        }
    }

    /// Reads the cancel and pause requests again. A queued job this host accepted and keeps
    /// paused in its `active/` (its `control/` pause request, written when the pause came) is
    /// resumed here when a host resumed it: its pause request goes, and the dispatcher, which
    /// watches `control/`, takes the job up again.
    private func refreshRequests() {
        queue.refreshRequests()
        guard let controls = env.controls else { return }
        for id in controls.ids(.pause) where queue.request(for: id) == nil {
            if (try? queue.store.job(id))??.origin == queue.store.origin { controls.clear(id) }
        }
    }

    /// Applies the providers' pauses and quiet times other hosts recorded to this host's.
    private func applySharedPauses() {
        let providers = env.apps.providers
        guard let sharing = providers.lazy.compactMap(\.sharing).first, let pauses = try? sharing.current() else { return }
        for pause in pauses { providers.first { $0.name == pause.provider }?.apply(pause) }
    }

    // MARK: Leases

    /// Renews every lease held; a chunk whose lease another host took is lost (its run stops).
    /// Unable to renew for a whole lease, every chunk in hand is lost: other hosts have them.
    /// Holding none, it reports so once more and stops until the next claim.
    private func renew() {
        let keys = state.withLock { s in s.held.filter { !$0.value.isLost }.map(\.key) }
        let sent = sent.load(ordering: .relaxed)
        let now = Uptime.seconds
        let rate = state.withLock { s -> Double in
            s.rate.sample(at: now, count: Int(sent))
            return s.rate.rate ?? 0
        }
        do {
            let kept = try queue.store.renew(keys, lease: lease, sent: sent, rate: keys.isEmpty ? 0 : rate)
            state.withLock { s in
                s.lastRenewed = now
                for key in keys where !kept.contains(key) { s.held[key]?.lose() }
                // Checked under the lock a claim adds its chunk under: a claim after this arms
                // a new renewer.
                if keys.isEmpty, s.held.isEmpty {
                    s.renewer?.cancel()
                    s.renewer = nil
                }
            }
            noteReachable()
        } catch {
            let late = state.withLock { s -> Bool in now - s.lastRenewed >= lease }
            if late { state.withLock { s in for held in s.held.values { held.lose() } } }
            noteUnreachable(error)
        }
    }

    private func noteUnreachable(_ error: any Error) {
        if !databaseAway.exchange(true, ordering: .acquiringAndReleasing) { StopBell.shared.ring() }
        let first = state.withLock { s -> Bool in
            defer { s.unreachableSince = s.unreachableSince ?? Uptime.seconds }
            return s.unreachableSince == nil
        }
        if first {
            env.log.error("the shared queue in \(queue.store.location) cannot be reached (\(RegistryError.detail(error))); no chunk is claimed until it answers")
        }
    }

    private func noteReachable() {
        databaseAway.store(false, ordering: .releasing)
        let was = state.withLock { s -> Double? in
            defer { s.unreachableSince = nil }
            return s.unreachableSince
        }
        if let was { env.log.info("the shared queue answers again after \(Int(Uptime.seconds - was)) s") }
    }
}
