import Dispatch
import Foundation
import PushspoolCore
import Synchronization

/// Feeds the spool to job runners: claims due jobs from `incoming/` (never more than it can run
/// at once, so other dispatchers sharing the spool can take the rest), resumes orphans in
/// `active/` whose dispatcher died (their job-file lock is free), quarantines job files with unsafe names,
/// and holds `not_before` jobs in `incoming/` until their time. Scans are coalesced and always
/// run to completion.
///
/// A scan lists `incoming/` once into a backlog; finished jobs are replaced from that backlog,
/// and the folder is listed again only when it is used up or a watcher event or the alarm asks, so
/// a backlog of n jobs costs O(n) listing work, not O(n²).
///
/// Nothing is looked at on a period. A scan is asked for by an event (a file arriving in
/// `incoming/`, a file closed in `active/`, a request in `control/`, a job's end) or by the one
/// alarm (`armWake`), armed at the earliest moment something waited for is due: a `not_before`,
/// a `local_time` wave, a file in `incoming/` settling, the spaced orphan look, the registry's
/// next notification sweep, the next `tmp/` leftover's 36 h.
public final class Dispatcher: Sendable {
    public let spool: Spool
    private let runner: JobRunner
    private let log: Log
    private let report: @Sendable (JobReport) -> Void
    private let maxJobs: Int
    private let control = DispatchQueue(label: "pushspool.dispatcher")
    private let idle = DispatchSemaphore(value: 0)
    /// A notification sweep under way: waited for before the dispatcher returns (its registry
    /// is closed after that).
    private let sweeps = DispatchGroup()
    /// This dispatcher's heartbeat record, for `status` and `resume`.
    private let presence: DispatcherPresence

    private struct State {
        var running: Set<String> = []
        var stopping = false
        var scanQueued = false
        /// When the last orphan scan, `tmp/` sweep and notification sweep were, on the monotonic
        /// clock (nil: not yet, or asked for again at once).
        var lastOrphanScan: DispatchTime?
        /// A file in `active/` was closed (its lock holder let go, or died: the kernel closes its
        /// files; or only a reader) or a job ended here (it may have stayed in `active/`) since the
        /// last orphan scan: one is due `orphanInterval` after that one.
        var orphanLookAsked = false
        /// What a peek found in waiting incoming files and the current batch, by name, so each
        /// file version is read once however often the folder is listed (bounded: `IncomingPlan`).
        var peeked: [String: IncomingPlan.Peeked] = [:]
        /// Due job names from the last listing, not yet claimed: the oldest last (taken with
        /// `popLast`, O(1)). At most `IncomingPlan.batchSize`: a flood is taken batch by batch.
        var backlog: [String] = []
        /// Jobs in `active/` from the last orphan scan not yet tried: every one of them is taken
        /// as job slots free up, so `run --once` resumes all of them before it exits, not only as
        /// many as it has slots.
        var orphans: [String] = []
        /// When `tmp/`'s next file turns `staleTemporaryAge` old (on `clock`'s wall time): its
        /// oldest at the last sweep, or a file written after that sweep at the earliest.
        var nextTmpSweep = Date.distantPast
        var lastNotificationSweep: DispatchTime?
        /// When the registry next has notifications to sweep (`NotificationSweep`); a job of this
        /// dispatcher starting or ending brings it forward to a minute after the last sweep.
        var nextNotificationSweep = Date.distantPast
        /// Jobs started or ended so far: a sweep's answer about the next one stands only if none
        /// did while it ran.
        var jobEvents = 0
        var sweepingNotifications = false
        var onceMode = false
        /// `run --once` waits out the settle time of files still being written until then, and
        /// then takes them as they are.
        var settleDeadline: Date?
        /// When the files still being written at the last listing will have settled.
        var settledBy: Date?
        var wake: (any DispatchSourceTimer)?
        /// Names in `incoming/` that are not jobs, already warned about (bounded).
        var warnedStrays: Set<String> = []
        /// Jobs in `active/` waiting for a job with the same id running here to end.
        var deferred: [String: (origin: JobRunner.Origin, id: String)] = [:]
        /// `local_time` jobs in `active/` between waves: the instant of each one's next wave
        /// (on `clock`). Left out of orphan scans; the wake timer starts each at its instant.
        var sleeping: [String: Date] = [:]
        /// The earliest `not_before` in `incoming/` at the last listing.
        var incomingDue: Date?
    }
    private let state = Mutex(State())

    /// The clock `local_time` waves are due on (the system's, or a test's accelerated one).
    private let clock: EngineClock

    init(spool: Spool, runner: JobRunner, log: Log, maxJobs: Int, clock: EngineClock = .system,
         report: @escaping @Sendable (JobReport) -> Void) {
        self.clock = clock
        self.spool = spool
        self.runner = runner
        self.log = log
        self.maxJobs = max(1, maxJobs)
        self.report = report
        presence = DispatcherPresence(spool: spool) { [apps = runner.env.apps] in apps.providers.map { $0.runtime() } }
    }

    private var controls: JobControls? { runner.env.controls }

    /// Watches `control/` (inotify): a cancel or pause reaches running jobs at once (they ask
    /// `controls` before each target); a cancelled or resumed job that is not running is
    /// started now (cancel also overrides `not_before`). A `resume` waiting for this dispatcher
    /// left a marker (`JobControls.resumeMarkers`): it is removed once the scan that follows
    /// the resume has run, which is the acknowledgement the command waits for.
    private func watchControls() -> SpoolWatcher? {
        guard let controls else { return nil }
        let watcher = SpoolWatcher(directory: controls.directory, removals: true)
        watcher.start { [weak self] in
            guard let self else { return }
            let changed = controls.refresh()
            // A cancel or pause: what its job waits for (a retry, a rate cap's turn) asks again.
            if changed { StopBell.shared.ring() }
            let markers = controls.resumeMarkers()
            guard changed || !markers.isEmpty else { return }
            // A job between waves hears a cancel or pause now (it starts, and acts on it).
            state.withLock { s in
                s.lastOrphanScan = nil
                s.sleeping = [:]
            }
            requestScan()
            // Queued behind the scan just requested (or the one already queued): runs after it.
            if !markers.isEmpty { control.async { markers.forEach(controls.acknowledgeResume) } }
        }
        // A request written between the runner's first look and the watch.
        if controls.refresh() { state.withLock { $0.lastOrphanScan = nil } }
        return watcher
    }

    public var isStopping: Bool { state.withLock { $0.stopping } }

    /// Jobs seen in `incoming/` at the last listing whose `not_before` is still ahead, soonest first.
    public var scheduled: [(name: String, notBefore: Date)] {
        let now = clock.wall()
        return state.withLock { s in
            s.peeked.compactMap { name, seen in seen.settling ? nil : seen.notBefore.flatMap { $0 > now ? (name, $0) : nil } }
        }.sorted { $0.notBefore < $1.notBefore }
    }

    /// Processes what is due now (orphans first), waits for it, returns. For cron: `run --once`.
    public func runOnce() {
        state.withLock { s in
            s.onceMode = true
            s.settleDeadline = clock.wall().addingTimeInterval(IncomingPlan.settleSeconds + 0.5)
        }
        presence.start()
        defer { presence.stop() }
        let controlWatcher = watchControls()
        requestScan()
        idle.wait()
        sweeps.wait()
        controlWatcher?.stop()
    }

    /// Watches the spool until `stop()`; then finishes or checkpoints running jobs and returns.
    ///
    /// A job's lock dies with its dispatcher when the kernel closes the dead process's files, so
    /// `active/` is watched for closes: a close asks for an orphan look. Where closes cannot be
    /// watched (no inotify) a look is asked for every `orphanFallback` seconds instead.
    public func runForever(watcher: SpoolWatcher, orphanFallback: Double = Dispatcher.orphanInterval) {
        presence.start()
        defer { presence.stop() }
        watcher.start { [weak self] in self?.requestScan() }
        let controlWatcher = watchControls()
        let closes = SpoolWatcher(directory: spool.url(.active), pollInterval: orphanFallback, closes: true)
        closes.start { [weak self] in self?.askOrphanLook() }
        requestScan()
        idle.wait()
        sweeps.wait()
        closes.stop()
        watcher.stop()
        controlWatcher?.stop()
    }

    /// Asks for a look at `active/`: now when the last was `orphanInterval` ago, else at that
    /// moment (the alarm). Closes in `active/` come from readers too (`status`, `serve`, this
    /// dispatcher's own tries at a held job): so they cost at most one look per interval, and
    /// only a flag while one is already asked for.
    private func askOrphanLook() {
        let due = state.withLock { s -> Bool? in
            if s.orphanLookAsked { return nil }
            s.orphanLookAsked = true
            return Self.seconds(since: s.lastOrphanScan, at: .now()) >= Self.orphanInterval - 0.5
        }
        switch due {
        case true?: requestScan()
        case false?: armWake()
        case nil: break
        }
    }

    /// Stops claiming; running jobs stop producing targets, finish what is in flight and stay in
    /// `active/` to be resumed.
    public func stop() {
        control.async { [self] in
            let done = state.withLock { s -> Bool in
                s.stopping = true
                s.wake?.cancel()
                return s.running.isEmpty
            }
            if done { idle.signal() }
        }
    }

    /// Asks for a scan; requests arriving while one is queued are folded into it.
    public func requestScan() {
        let enqueue = state.withLock { s -> Bool in
            if s.scanQueued { return false }
            s.scanQueued = true
            return true
        }
        if enqueue { control.async { [self] in scan() } }
    }

    /// The least time between two looks at `active/` for jobs whose dispatcher died (their lock
    /// is free), each asked for by a close there or a job's end: a crashed dispatcher's jobs are
    /// taken over by another one on the spool within this.
    public static let orphanInterval = 5.0

    /// Lists the spool: orphans in `active/` (when asked, at most every `orphanInterval`) and due
    /// jobs in `incoming/` into the backlog, then claims from it.
    private func scan() {
        state.withLock { $0.scanQueued = false }
        if isStopping { return }
        // Wall time: what files' modification times and `not_before` are compared with.
        let now = clock.wall(), tick = DispatchTime.now()
        let orphanScanDue = state.withLock { s -> Bool in
            guard s.lastOrphanScan == nil
                    || (s.orphanLookAsked && Self.seconds(since: s.lastOrphanScan, at: tick) >= Self.orphanInterval - 0.5) else { return false }
            s.lastOrphanScan = tick
            s.orphanLookAsked = false
            return true
        }
        if orphanScanDue {
            quarantineUnsafeNames(in: .active)
            let active = spool.jobs(in: .active)
            runner.owners.sweep(active: Set(active))
            let paused = controls?.ids(.pause).subtracting(controls?.ids(.cancel) ?? []) ?? []
            // (A paused job is left alone; one whose file name is not its id is looked at and left.)
            var orphans = active.filter { !paused.contains(String($0.dropLast(5))) }
            // A `local_time` job between waves (its next wave ahead, nothing asked of it) is not
            // started to find that out: its wave goes on the timer, here as on any dispatcher.
            var sleepers: [String: Date] = [:]
            for name in orphans {
                let id = String(name.dropLast(5))
                guard controls?.request(for: id) == nil, let next = NextWave.read(NextWave.url(in: spool, jobID: id)),
                      let at = RFC3339.date(from: next.at), clock.secondsUntil(at) > 0 else { continue }
                sleepers[name] = at
            }
            orphans.removeAll { sleepers[$0] != nil }
            state.withLock { s in
                s.orphans = orphans
                if !s.onceMode { s.sleeping.merge(sleepers) { $1 } }
            }
        }
        sweepTemporaries(now: now)
        sweepNotifications(now: now, tick: tick)
        wakeDueSleepers()
        listIncoming(now: now)
        claimFromBacklog(rescanWhenEmpty: false)
    }

    /// `local_time` jobs whose next wave is due go first among the orphans.
    private func wakeDueSleepers() {
        state.withLock { s in
            let due = s.sleeping.filter { clock.secondsUntil($0.value) <= 0 }.keys.sorted()
            for name in due { s.sleeping[name] = nil }
            s.orphans = due + s.orphans.filter { !due.contains($0) }
        }
    }

    /// Lists `incoming/` (`IncomingPlan`): the due batch becomes the backlog; unsafe names are
    /// quarantined; files that are not jobs are warned about, once each.
    private func listIncoming(now: Date) {
        let (known, settle) = state.withLock { s in (s.peeked, !(s.onceMode && now > (s.settleDeadline ?? now))) }
        guard let plan = IncomingPlan(spool: spool, known: known, controls: controls, now: now, settle: settle) else {
            state.withLock { s in
                s.backlog = []
                s.settledBy = nil
            }
            return
        }
        for raw in plan.unsafe {
            if let result = runner.quarantine.quarantine(unsafe: raw, in: .incoming) { report(result) }
        }
        warnAboutStrays(plan)
        IncomingTally(jobs: plan.jobs, strays: plan.strays, oldestModified: plan.oldestModified, at: clock.wall().timeIntervalSince1970, pid: getpid()).write(to: spool)
        state.withLock { s in
            s.peeked = plan.peeked      // forgets files that are gone
            s.backlog = plan.due.reversed()
            s.settledBy = plan.settledBy
        }
        state.withLock { $0.incomingDue = plan.nextDue }
        armWake()
    }

    /// `Welcome.JSON`, `notes.txt`: never run, so said once, or a user waits for ever.
    private func warnAboutStrays(_ plan: IncomingPlan) {
        guard plan.strays > 0 else { return }
        let fresh = state.withLock { s -> [String] in
            let new = plan.strayNames.filter { !s.warnedStrays.contains($0) }
            if s.warnedStrays.count < 1000 { s.warnedStrays.formUnion(new) }
            return new
        }
        for name in fresh {
            log.warning("\(spool.url(.incoming, name).path) is not a job (jobs are *.json files whose names do not start with '.'): left alone")
        }
        if !fresh.isEmpty, plan.strays > plan.strayNames.count {
            log.warning("\(plan.strays) files in \(spool.url(.incoming).path) are not jobs; the first \(plan.strayNames.count) are named above")
        }
    }

    /// Claims backlog jobs while there is room. When the backlog is used up and there is room
    /// left, the folder is listed again (new arrivals) if `rescanWhenEmpty`.
    private func claimFromBacklog(rescanWhenEmpty: Bool) {
        while hasRoom(), !isStopping {
            if let orphan = nextOrphan() {
                start(orphan, origin: .orphan)
                continue
            }
            guard let name = state.withLock({ s in s.backlog.popLast() }) else {
                if rescanWhenEmpty { scan() }
                return finishIfIdle()
            }
            if spool.claim(name) { start(name, origin: .incoming) }
        }
        finishIfIdle()
    }

    /// The next job from the orphan list that is not running or waiting here already.
    private func nextOrphan() -> String? {
        state.withLock { s in
            while !s.orphans.isEmpty {
                let name = s.orphans.removeFirst()
                if !s.running.contains(name) && s.deferred[name] == nil && s.sleeping[name] == nil { return name }
            }
            return nil
        }
    }

    /// Files in `tmp/` older than this are a writer's leftovers (it crashed, or its disk was
    /// full), removed as Maildir readers do: no writer takes 36 h between create and rename.
    static let staleTemporaryAge = 36.0 * 3600

    /// Seconds from `mark` to `tick` on the monotonic clock; infinite when there is no mark.
    private static func seconds(since mark: DispatchTime?, at tick: DispatchTime) -> Double {
        mark.map { Double(tick.uptimeNanoseconds - min($0.uptimeNanoseconds, tick.uptimeNanoseconds)) / 1e9 } ?? .infinity
    }

    /// Sweeps `tmp/` when its oldest file turns `staleTemporaryAge` old: files older than that by
    /// their modification time (`now`, wall) go. The next sweep is when the oldest one left turns
    /// that old, and no later than that age from now (a file written after this sweep).
    private func sweepTemporaries(now: Date) {
        guard state.withLock({ now >= $0.nextTmpSweep }) else { return }
        let swept = spool.removeTemporaries(olderThan: now.addingTimeInterval(-Self.staleTemporaryAge))
        state.withLock { $0.nextTmpSweep = min(swept.oldestKept ?? now, now).addingTimeInterval(Self.staleTemporaryAge) }
        let removed = swept.removed
        if removed > 0 { log.info("removed \(removed) file\(removed == 1 ? "" : "s") older than 36 h from \(spool.url(.tmp).path) (writers' leftovers)") }
    }

    /// Expired secure content and old events (`NotificationSweep`), when the last sweep said the
    /// next is due, at most once a minute, off the scanning queue: a registry another process
    /// holds busy delays the sweep, not the jobs.
    private func sweepNotifications(now: Date, tick: DispatchTime) {
        let due = state.withLock { s -> Int? in
            guard now >= s.nextNotificationSweep, Self.seconds(since: s.lastNotificationSweep, at: tick) >= NotificationSweep.interval,
                  !s.sweepingNotifications else { return nil }
            s.lastNotificationSweep = tick
            s.sweepingNotifications = true
            return s.jobEvents
        }
        guard let events = due else { return }
        let env = runner.env
        DispatchQueue.global(qos: .utility).async(group: sweeps) { [self] in
            let next = NotificationSweep(registry: env.registry, spool: env.spool, keepDays: env.receiptsKeepDays, log: env.log).run(now: now)
            state.withLock { s in
                s.sweepingNotifications = false
                // Unless a job started or ended meanwhile (then the next scan sweeps again).
                if s.jobEvents == events { s.nextNotificationSweep = next ?? .distantFuture }
            }
            armWake()       // for the next sweep
        }
    }

    private func finishIfIdle() {
        // `run --once` also waits for files it found still being written (at most 2 s).
        let finished = state.withLock { s in s.running.isEmpty && ((s.onceMode && s.settledBy == nil) || s.stopping) }
        if finished { idle.signal() }
    }

    private func isRunning(_ name: String) -> Bool { state.withLock { $0.running.contains(name) } }
    private func isDeferred(_ name: String) -> Bool { state.withLock { $0.deferred[name] != nil } }
    private func hasRoom() -> Bool { state.withLock { $0.running.count < maxJobs } }

    /// Each running job gets a thread of its own: its producer blocks on the worker pool's
    /// semaphore by design, and blocking would starve Dispatch's shared worker threads, which the
    /// pool's timers and the providers' completions need.
    private func start(_ name: String, origin: JobRunner.Origin) {
        state.withLock { s in
            s.running.insert(name)
            s.deferred[name] = nil
            // It may hold secure content, or end: the registry may have something to sweep.
            s.nextNotificationSweep = .distantPast
            s.jobEvents += 1
        }
        let thread = Thread { [self] in
            let result = runner.run(name, origin: origin)
            switch result.outcome {
            case .skipped, .waiting: break                 // reported when it runs
            case .busy where origin == .orphan: break      // another live dispatcher's job: not news
            default: report(result)
            }
            control.async { [self] in
                let rearm = state.withLock { s -> Bool in
                    s.running.remove(name)
                    s.nextNotificationSweep = .distantPast
                    s.jobEvents += 1
                    // It may have stayed in `active/` (interrupted: a full disk, the registry
                    // gone): looked at again, as any orphan, `orphanInterval` after the last look.
                    let asked = !s.orphanLookAsked
                    s.orphanLookAsked = true
                    if result.outcome == .waiting { s.deferred[name] = (origin, result.id) }
                    guard case .interrupted(.nextWave(let at, _, _)) = result.outcome, !s.onceMode else { return asked }
                    s.sleeping[name] = at
                    return true
                }
                if rearm { armWake() }
                if isStopping {
                    finishIfIdle()
                } else {
                    // Resumed (or cancelled) while its requests in flight were finishing: the
                    // scan the request caused found it still running here and left it. It goes
                    // on (or ends as cancelled) now, not at the next look at active/ seconds later.
                    if result.outcome == .paused, controls?.request(for: result.id) != .pause, hasRoom() {
                        start(name, origin: .orphan)
                    }
                    startDeferred()
                    claimFromBacklog(rescanWhenEmpty: true)
                }
            }
        }
        thread.name = "pushspool job \(name)"
        thread.start()
    }

    /// Starts again the jobs that waited for a job with their id, once it has ended here. Every
    /// job's end calls this after the runner forgot it, so none waits for ever.
    private func startDeferred() {
        let deferred = state.withLock { $0.deferred }
        for (name, waiting) in deferred.sorted(by: { $0.key < $1.key }) where !runner.isWorking(on: waiting.id, besides: name) {
            guard hasRoom() else { return }
            start(name, origin: waiting.origin)
        }
    }

    /// Job files in `folder` whose names are not valid UTF-8 or hold control characters go to
    /// `failed/` under a safe name, unread (`JobRunner.quarantine(unsafe:in:)`).
    private func quarantineUnsafeNames(in folder: Spool.Folder) {
        for raw in spool.unsafeJobNames(in: folder) {
            if let result = runner.quarantine.quarantine(unsafe: raw, in: folder) { report(result) }
        }
    }

    /// Wakes the scanner when the earliest thing it waits for is due (no busy-waiting, no period):
    /// a scheduled job, a `local_time` wave, a file in `incoming/` settling, an asked-for orphan
    /// look, the next notification sweep, the next `tmp/` sweep.
    private func armWake() {
        state.withLock { s in
            s.wake?.cancel()
            s.wake = nil
            guard !s.stopping else { return }
            let now = clock.wall(), tick = DispatchTime.now()
            // A wave's instant is on `clock`; the timer waits real seconds.
            let wave = s.sleeping.values.min().map { now.addingTimeInterval(clock.secondsUntil($0)) }
            // Marks on the monotonic clock, as instants on `clock`'s wall time.
            func after(_ mark: DispatchTime?, _ seconds: Double) -> Date {
                mark.map { now.addingTimeInterval(seconds - Self.seconds(since: $0, at: tick)) } ?? now
            }
            let orphanLook = s.orphanLookAsked ? after(s.lastOrphanScan, Self.orphanInterval) : nil
            let sweep = s.sweepingNotifications || s.nextNotificationSweep == .distantFuture ? nil
                : max(s.nextNotificationSweep, after(s.lastNotificationSweep, NotificationSweep.interval))
            let due = [s.incomingDue, wave, s.settledBy, orphanLook, sweep, s.nextTmpSweep].compactMap { $0 }.min()
            // `run --once` waits for no scheduled job, only for files still being written.
            guard let date = s.onceMode ? s.settledBy : due else { return }
            let timer = DispatchSource.makeTimerSource(queue: control)
            timer.schedule(wallDeadline: .now() + max(0.01, date.timeIntervalSince(clock.wall()) + 0.01), leeway: .milliseconds(20))
            timer.setEventHandler { [weak self] in self?.requestScan() }
            timer.resume()
            s.wake = timer
        }
    }
}
