/// What the send path works with, of all a `JobRunner.Environment` holds: the registry its
/// audience comes from (and its frequency caps), the pool and routes its targets go through,
/// and where it reports (events, progress, metrics, the `device.unregistered` webhook). The
/// stages take less still: each only what it uses.
struct SendServices: Sendable {
    var registry: any RegistryDatabase
    var pool: WorkerPool
    var apps: AppRoutes
    var log: Log
    var activity: Activity? = nil
    var metrics: Metrics? = nil
    var webhooks: Webhooks? = nil
    /// The engine's clock: the wall time cap windows and prunes are stamped with.
    var clock: EngineClock = .system
}
