import PushspoolCore

extension JobRunner {
    /// What a runner works with, shared by every job it runs.
    struct Environment: Sendable {
        var spool: Spool
        var registry: any RegistryDatabase
        var pool: WorkerPool
        /// Provider state per app and platform, from config `apps` (or `routes`).
        var apps: AppRoutes
        var log: Log
        var isStopping: @Sendable () -> Bool
        /// Operators' cancel and pause requests (`control/`).
        var controls: JobControls? = nil
        /// Running jobs' progress, for the progress lines and metrics.
        var activity: Activity? = nil
        var metrics: Metrics? = nil
        /// The configured webhooks; nil: none.
        var webhooks: Webhooks? = nil
        /// People's clocks: the time `local_time` waves and quiet hours are judged by, the
        /// grace of a late wave (`local_time_grace_minutes`, in seconds) and each app's
        /// `default_tz` and `quiet_hours`.
        var clock: EngineClock = .system
        var localTimeGrace: Double = 3600
        var appConfigs: [String: AppConfig] = [:]
        /// The job queue shared with the other hosts on a PostgreSQL registry; nil: none.
        var queue: SharedQueue? = nil
        /// `receipts.keep_days`: how long a tracked job's events are kept after it ended.
        var receiptsKeepDays = 30

        /// The default app's provider state per platform.
        var routes: [Platform: ProviderState] { apps.routes }

        /// What the send path takes of it (`SendRun` and its stages).
        var sending: SendServices {
            SendServices(registry: registry, pool: pool, apps: apps, log: log, activity: activity, metrics: metrics, webhooks: webhooks, clock: clock)
        }

        /// What a `local_time` run judges its waves by (`LocalTimeRun`).
        var peoplesClocks: PeoplesClocks { PeoplesClocks(clock: clock, grace: localTimeGrace, apps: appConfigs) }
    }
}
