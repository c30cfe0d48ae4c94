import PushspoolKit
import Dispatch
import Foundation
import PushspoolCore

/// `pushspool serve` assembled: the routes over the spool and registry, the checks before them,
/// and the embedded server under them. The command line builds one from the config; tests build
/// one over a temporary spool. Never sends a push: `run` does.
public final class FrontDoorServer: Sendable {
    public let server: HTTPServer
    public let intake: JobIntake
    public let metrics: HTTPMetrics
    public let health: HealthCheck
    /// The events apps reported through this server (`pushspool_notification_events_total`).
    public let events: Metrics
    private let listen: ListenAddress
    private let door: FrontDoor
    private let queue: PostgresJobQueue?

    public struct Parts: Sendable {
        public var config: Config
        public var spool: Spool
        public var registry: any DeviceRegistry
        public var registrations: RegistrationService
        public var authenticator: (any RequestAuthenticator)?
        public var log: Log
        /// PEM key and certificate when `http.tls` names them.
        public var tls: (key: String, cert: String)?
        /// Secure content, events and funnels (`NotificationAPI`); nil: the registry's own
        /// (`NotificationDesks`), when it is one that keeps notifications.
        public var desk: (any NotificationDesk)?

        public init(config: Config, spool: Spool, registry: any DeviceRegistry, registrations: RegistrationService,
                    authenticator: (any RequestAuthenticator)?, log: Log, tls: (key: String, cert: String)? = nil,
                    desk: (any NotificationDesk)? = nil) {
            self.config = config
            self.spool = spool
            self.registry = registry
            self.registrations = registrations
            self.authenticator = authenticator
            self.log = log
            self.tls = tls
            self.desk = desk
        }
    }

    public init(_ parts: Parts) throws(ServerError) {
        let http = parts.config.http ?? HTTPConfig()
        guard let listen = ListenAddress(http.listen) else { throw ServerError("http.listen: \(http.listen) is not host:port") }
        self.listen = listen
        intake = JobIntake(spool: parts.spool)
        metrics = HTTPMetrics()
        // Bounded below the answer's 1 s lifetime, so a database that does not answer shows at the next probe.
        health = HealthCheck(check: HealthCheck.spoolAndRegistry(
            spool: parts.spool, registry: RegistryProbe(config: parts.config, timeout: 0.5, open: parts.registry)))
        // With the shared queue on, jobs other hosts accepted are read and steered through it.
        let queue = EngineSetup.sharedQueue(config: parts.config, registry: parts.registry, connections: 2)
        self.queue = queue
        // With PostgreSQL, the desk reads the MAC key and the notifications every host shares.
        let events = Metrics()
        self.events = events
        // Result logs read incrementally, shared by the funnel and the dashboard.
        let digests = ResultLogDigests(spool: parts.spool)
        let desk = parts.desk ?? (parts.registry as? any RegistryDatabase).map {
            NotificationDesks.desk(registry: $0, spool: parts.spool, queue: queue, metrics: events, digests: digests)
        }
        let jobs = JobAPI(spool: parts.spool, intake: intake, queue: queue, desk: desk)
        let operations = OperationsAPI(health: health, metrics: metrics, spool: parts.spool,
                                       dispatcherTextfile: parts.config.metrics.textfile.map { parts.config.resolve($0).path }, events: events)
        let apps = ServedApps(parts.config)
        let devices = DeviceAPI(registrations: parts.registrations, registry: parts.registry, apps: apps)
        let tutorial = TutorialAPI(registrations: parts.registrations, jobs: jobs, http: http, apps: apps)
        let notifications = desk.map { NotificationAPI(desk: $0, apps: apps).routes } ?? []
        // The operators' dashboard, when http.operators_file names its accounts.
        var dashboard: [FrontDoor.Route] = []
        let sessions: OperatorSessions? = http.operatorsFile == nil ? nil : OperatorSessions()
        if let sessions {
            let data = DashboardData(config: parts.config, spool: parts.spool, registry: parts.registry, queue: queue, desk: desk,
                                     operations: operations, digests: digests)
            dashboard = DashboardAPI(sessions: sessions, authenticator: parts.authenticator, jobs: jobs, data: data,
                                     secureCookies: parts.tls != nil, trustedProxies: http.trustedProxies).routes
        }
        door = FrontDoor(routes: tutorial.routes + notifications + jobs.routes + devices.routes + operations.routes + dashboard,
                             authenticator: parts.authenticator, metrics: metrics, log: parts.log,
                             registryConnections: parts.registry.concurrentCalls,
                             trustedProxies: http.trustedProxies, sessions: sessions)
        var limits = HTTPServer.Limits()
        limits.timeoutSeconds = http.timeoutSeconds
        limits.maxConnections = http.maxConnections
        limits.maxConnectionsPerAddress = http.maxConnectionsPerAddress
        limits.requestTimeoutSeconds = Double(http.requestTimeoutSeconds)
        // A full batch of events (1,000 of about 110 bytes at most) is over the 64 KiB every other route keeps.
        if desk != nil { limits.largerBodies = ["/v1/events": NotificationAPI.maxBatchBody] }
        server = HTTPServer(limits: limits, tls: parts.tls, handler: door.handle, completed: door.completed)
    }

    /// Every route this server answers (`GET /v1/jobs/{id}`): the OpenAPI document lists the same.
    public var routeNames: [String] { door.routeNames }

    /// serve's own metrics (its textfile, and the first part of `GET /metrics`): the HTTP
    /// families, then the events apps reported here.
    public func renderMetrics() -> String {
        metrics.render() + OperationsAPI.eventFamily(events)
    }

    /// Starts listening; returns the address bound (its port when `http.listen` asked for 0).
    public func start() throws(ServerError) -> ListenAddress { try server.start(listen) }

    /// Stops serving (see `HTTPServer.stop(grace:)`), then waits for the work begun for requests
    /// (at most `grace` more seconds): afterwards nothing of serve's touches the registry, which
    /// the caller may close. False when some work was still running.
    @discardableResult
    public func stop(grace: Double = 10) -> Bool {
        server.stop(grace: grace)
        defer { queue?.close() }
        return door.drain(seconds: grace)
    }
}
