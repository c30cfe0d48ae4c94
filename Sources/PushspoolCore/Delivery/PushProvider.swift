/// Where one notification goes.
public enum Recipient: Sendable, Equatable {
    /// A device from the local registry (direct providers and the sandbox).
    case device(Device)
    /// A hub that resolves the audience itself (Azure Notification Hubs).
    case hub(Audience)
}

/// One attempt to deliver one rendered notification to one recipient.
public struct SendRequest: Sendable {
    public var jobID: String
    public var platform: Platform
    public var recipient: Recipient
    public var notification: RenderedNotification
    /// 1 for the first attempt.
    public var attempt: Int
    /// The app a hub or service send is for (a device carries its own); nil: the provider's own.
    public var app: String?

    public init(jobID: String, platform: Platform, recipient: Recipient,
                notification: RenderedNotification, attempt: Int = 1, app: String? = nil) {
        self.jobID = jobID
        self.platform = platform
        self.recipient = recipient
        self.notification = notification
        self.attempt = attempt
        self.app = app
    }
}

/// The seam between the engine and a push service.
///
/// Contract:
/// - `send` is thread-safe and non-blocking; it may be called from many threads at once, and calls
///   `completion` exactly once, on any thread, for every request (also after `shutdown`, with a
///   `.retry` result, so the engine never waits forever).
/// - Responses are classified into a `Disposition` here, in the provider, using the service's own
///   table (README: "How answers are handled"); retries, backoff, registry pruning and pausing happen in the engine.
/// - Credentials never appear in a `ProviderResult`.
/// - `shutdown` is idempotent and waits for in-flight requests to finish or fail.
public protocol PushProvider: AnyObject, Sendable {
    /// The provider's name as used in config `routes` and in result logs (`apns`, `sandbox`, …).
    var name: String { get }
    /// Whether the provider resolves audiences itself (a hub) instead of receiving devices.
    var resolvesTags: Bool { get }
    /// Checks a job's audience before anything is sent (hub tag limits); nil when acceptable.
    func audienceProblem(_ audience: Audience) -> String?
    func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void)
    /// The provider's own registration store, when it keeps one (a hub); nil for direct providers.
    var installations: (any InstallationStore)? { get }
    /// Calls `ready` once a request could leave at once: when the access token its requests
    /// carry is held (or could not be had: the request then fails as it would). A rate cap asks
    /// before it admits a request, so that requests waiting for a token are not admitted meanwhile
    /// and then leave together. Most providers are always ready.
    func whenReady(_ ready: @escaping @Sendable () -> Void)
    func shutdown()
}

extension PushProvider {
    public var resolvesTags: Bool { false }
    public var installations: (any InstallationStore)? { nil }
    public func audienceProblem(_ audience: Audience) -> String? { nil }
    public func whenReady(_ ready: @escaping @Sendable () -> Void) { ready() }
}

/// One change to a service's own copy of a registration.
public enum InstallationChange: Sendable, Equatable {
    /// Create or replace the installation of this device.
    case put(Device)
    /// Remove the installation with this id (already gone counts as done).
    case delete(id: String)

    public var installationID: String {
        switch self {
        case .put(let d): return d.id
        case .delete(let id): return id
        }
    }
}

/// A service that resolves tags against registrations of its own (a hub), so every local
/// registration change must reach it too.
///
/// Contract as `PushProvider.send`: thread-safe, non-blocking, `completion` exactly once; the
/// answer is classified into a `Disposition` (delivered = the service holds the change), and the
/// engine's one `RetryPolicy` decides what follows.
public protocol InstallationStore: AnyObject, Sendable {
    /// Whether this store keeps installations of `platform`.
    func serves(_ platform: Platform) -> Bool
    func apply(_ change: InstallationChange, completion: @escaping @Sendable (ProviderResult) -> Void)
}
