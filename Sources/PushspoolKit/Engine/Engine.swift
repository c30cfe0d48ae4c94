// Config, Platform, RetryPolicy and the job values are PushspoolCore's: an embedder that imports
// PushspoolKit gets them with it.
@_exported import PushspoolCore
import Foundation
import Synchronization

/// The dispatcher and everything it works with, assembled from a `Config` in one place: the
/// registry, one provider per routed name, the worker pool, the job runner (which makes each
/// job's outcome recorder), the operators' controls, progress and metrics. `run`, `serve`'s
/// tests, `demo` and the test suites all build the engine here.
///
/// What belongs to a process rather than to the engine stays with the caller: signal handlers,
/// the check that the spool was not moved away, and what is printed per job (`Hooks.report`).
///
///     let engine = try Engine(config: config, spool: try Spool(root: url), hooks: Engine.Hooks(log: log))
///     engine.runOnce()        // or runForever(), with stop() from a signal handler
///     engine.shutdown()
public final class Engine: Sendable {
    /// What the embedding process decides.
    public struct Hooks: Sendable {
        /// The engine's logger: passed, never a global, so an embedder's lines go where it says.
        public var log: Log
        /// Asked before each target, besides `stop()`: true stops producing targets.
        public var isStopping: @Sendable () -> Bool
        /// Each job's end, in the order jobs end (called on the engine's threads).
        public var report: @Sendable (JobReport) -> Void
        /// Retry jitter in 0..<1 (tests fix it).
        public var random: @Sendable () -> Double
        /// Where the live progress lines are drawn (`run` on a terminal); nil: nowhere.
        public var board: TerminalBoard?
        /// People's clocks: what `local_time` waves, quiet hours and the grace rule are judged by
        /// (the system's; an accelerated one only in tests and benchmarks).
        public var clock: EngineClock

        public init(log: Log, isStopping: @escaping @Sendable () -> Bool = { false },
                    report: @escaping @Sendable (JobReport) -> Void = { _ in },
                    random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
                    board: TerminalBoard? = nil, clock: EngineClock = .system) {
            self.log = log
            self.clock = clock
            self.isStopping = isStopping
            self.report = report
            self.random = random
            self.board = board
        }
    }

    public let config: Config
    public let spool: Spool
    public let registry: any RegistryDatabase
    /// Provider state per app and platform, from the config's `apps` (or its `routes`).
    public let apps: AppRoutes
    /// The default app's provider state per platform.
    public var routes: [Platform: ProviderState] { apps.routes }
    public let metrics = Metrics()
    public let activity: Activity
    public let controls: JobControls
    public let pool: WorkerPool
    public let dispatcher: Dispatcher
    /// The configured webhooks (README "Webhooks"); nil: none, or they could not be set up (logged).
    public let webhooks: Webhooks?
    let runner: JobRunner
    /// This host's share of the queue on a PostgreSQL registry (nil: none, or `queue.enabled` false).
    private let worker: ChunkWorker?
    private let monitor: RunMonitor
    private let stopping = StopFlag()

    /// Opens the registry the config names and sets up every routed provider. Throws every
    /// configuration problem at once (a bad key file, a CA file OpenSSL cannot read), or an I/O
    /// one when the registry cannot be opened.
    public convenience init(config: Config, spool: Spool, hooks: Hooks) throws(EngineSetupError) {
        let registry = try EngineSetup.openRegistry(config, log: hooks.log)
        let apps: AppRoutes
        do {
            apps = try EngineSetup.makeApps(config: config, spool: spool, log: hooks.log, registry: registry, clock: hooks.clock)
        } catch {
            registry.close()
            throw error
        }
        self.init(config: config, spool: spool, registry: registry, apps: apps, hooks: hooks)
    }

    /// One app with these routes (an embedder's own providers, or a test's scripted ones).
    public convenience init(config: Config, spool: Spool, registry: any RegistryDatabase, routes: [Platform: ProviderState],
                            hooks: Hooks) {
        self.init(config: config, spool: spool, registry: registry, apps: AppRoutes(routes, app: config.defaultApp), hooks: hooks)
    }

    /// With a registry and providers made elsewhere (an embedder's own, or a test's scripted
    /// providers); everything else comes from `config`.
    public init(config: Config, spool: Spool, registry: any RegistryDatabase, apps: AppRoutes, hooks: Hooks) {
        self.config = config
        self.spool = spool
        self.registry = registry
        self.apps = apps
        let clock = hooks.clock
        activity = Activity(clock: clock)
        let log = hooks.log, metrics = metrics, activity = activity
        controls = JobControls(directory: spool.url(.control), clock: clock)
        pool = EngineSetup.workerPool(config: config, metrics: metrics, random: hooks.random)
        var service: Webhooks?
        do {
            service = try Webhooks(config: config, spool: spool, metrics: metrics.webhooks, log: log)
        } catch {
            log.error("webhooks: cannot be set up (\(error)); no webhook events are sent")
        }
        webhooks = service
        service?.start()
        let flag = stopping
        let userStop = hooks.isStopping
        let shared = registry.shared.flatMap { registry in
            config.queue.enabled && RegistryLocation.isPostgres(config.registryPath)
                ? SharedQueue(registry: registry, config: config.queue, spool: spool) : nil
        }
        var env = JobRunner.Environment(spool: spool, registry: registry, pool: pool, apps: apps,
                                                 log: log, isStopping: { flag.isSet || userStop() },
                                                 controls: controls, activity: activity, metrics: metrics,
                                                 webhooks: service,
                                                 clock: clock,
                                                 localTimeGrace: Double(config.localTimeGraceMinutes) * 60, appConfigs: config.apps)
        env.queue = shared
        env.receiptsKeepDays = config.receipts.keepDays
        runner = JobRunner(env)
        worker = shared.map { ChunkWorker(queue: $0, env: env) }
        let monitor = RunMonitor(activity: activity, metrics: metrics, spool: spool, providers: apps.providers,
                                 controls: controls, board: hooks.board ?? TerminalBoard(enabled: false),
                                 textfile: MetricsTextfile.forProcess(config, spool: spool, role: .run, log: log),
                                 intervalSeconds: config.metrics.intervalSeconds, log: log)
        self.monitor = monitor
        let report = hooks.report
        dispatcher = Dispatcher(spool: spool, runner: runner, log: log, maxJobs: config.maxJobs, clock: clock) { r in
            monitor.report(r) { report(r) }
        }
    }

    /// Each provider once, however many apps and platforms route to it.
    public var providers: [ProviderState] { apps.providers }

    /// Runs what is due now (resumable jobs in `active/` first), waits for it, returns: `run --once`.
    public func runOnce() {
        worker?.start(ownJobsOnly: true)
        dispatcher.runOnce()
        worker?.stop()
        worker?.wait()
    }

    /// Watches `incoming/` until `stop()`, then lets running jobs checkpoint and returns.
    public func runForever() {
        worker?.start()
        dispatcher.runForever(watcher: SpoolWatcher(directory: spool.url(.incoming)))
        worker?.stop()
        worker?.wait()
    }

    /// Stops claiming jobs and producing targets; what is in flight finishes and running jobs
    /// stay in `active/`, to resume where their result logs end. Safe from any thread, any time.
    public func stop() {
        stopping.set()
        worker?.stop()
        dispatcher.stop()
    }

    /// After a run returned: the metrics file written a last time, the progress lines cleared,
    /// the providers' connections closed and the registry closed.
    public func shutdown() {
        // Webhook deliveries first, so that the metrics file's last write counts them.
        webhooks?.shutdown()
        monitor.finish()
        for p in providers { p.provider.shutdown() }
        registry.close()
    }
}

/// Asked several times per notification: an atomic, not a lock.
private final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .acquiring) }
    /// Sets it and rings the `StopBell`: whatever waits (a retry, a rate cap's turn) asks again.
    func set() {
        flag.store(true, ordering: .releasing)
        StopBell.shared.ring()
    }
}
