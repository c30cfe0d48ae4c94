import Foundation
import PushspoolCore

/// What the registry keeps of tracked jobs (§ The app talks back), the same on SQLite and
/// PostgreSQL, so that any host sharing a PostgreSQL registry answers any notification id:
///
/// - `notification_keys`: the one secret that keys every id's MAC, made by the first process
///   that needs it (a race between two hosts keeps the first one written);
/// - `notification_jobs`: one row per tracked job (never one per device): its number, which ids
///   carry, a secure job's content until `expires_at` (then erased), its audience (a hub id's
///   ownership), its apps and platforms, when it was sent and ended, and the delivery counts its
///   result log had when it ended;
/// - `notification_events`: what apps reported, one row per (job, device key, platform, type),
///   so each (id, type) counts once; deleted `receipts.keep_days` after their job ended.
///
/// Errors: `RegistryError` only. Thread safety: every method may be called from any thread.
public protocol NotificationStore: AnyObject, Sendable {
    /// The MAC key of notification ids, made (32 random bytes) and kept on first use.
    func notificationKey() throws(RegistryError) -> [UInt8]
    /// The number of tracked job `job.id`, its row written now unless one exists (a resumed run, or
    /// a chunk on another host, gets the number given first; the row is not changed).
    func trackJob(_ job: TrackedJob) throws(RegistryError) -> Int64
    func trackedJob(number: Int64) throws(RegistryError) -> TrackedJob?
    func trackedJob(id: String) throws(RegistryError) -> TrackedJob?
    /// The device whose registry key (SQLite rowid, PostgreSQL `seq`) is `key`.
    func device(key: Int64) throws(RegistryError) -> Device?
    /// Records when the job ended (its events are kept `receipts.keep_days` from then).
    func endTrackedJob(id: String, at: Date) throws(RegistryError)
    /// Keeps the delivery counts of an ended job's result log, so that its funnel is read from
    /// here afterwards, on any host, without reading the log again.
    func saveDeliveries(id: String, _ tally: DeliveryTally) throws(RegistryError)
    /// Inserts each event unless its (job, device, platform, type) is there; true for each inserted.
    func recordEvents(_ events: [StoredEvent]) throws(RegistryError) -> [Bool]
    /// Whether that (job, device, platform, type) was recorded.
    func hasEvent(job: Int64, device: Int64, platform: Platform, type: String) throws(RegistryError) -> Bool
    /// The job's events counted by app, platform and type (by the database: `GROUP BY`).
    func eventCounts(job: Int64) throws(RegistryError) -> [EventCount]
    /// Erases the content of secure jobs whose `expires_at` is past; returns their job ids and
    /// file names.
    func eraseExpiredContent(now: Date) throws(RegistryError) -> [(id: String, file: String?)]
    /// Deletes the events of jobs that ended before `endedBefore` (and those jobs' rows, once their
    /// content is gone too). Returns how many events were deleted.
    @discardableResult
    func purgeEvents(endedBefore: Date) throws(RegistryError) -> Int
    /// When a sweep next has something to do: the earliest expiry of secure content still held,
    /// or the earliest moment a tracked job's events are `keepDays` past its end; nil: nothing
    /// is due until another job is tracked or ends.
    func nextSweep(keepDays: Int) throws(RegistryError) -> Date?
}

/// A tracked job as the registry keeps it.
public struct TrackedJob: Sendable, Equatable {
    /// Handed out by the registry (0 before it is).
    public var number: Int64
    public var id: String
    public var secure: Bool
    /// A secure job's content; nil for a tracked job that is not secure, and once erased.
    public var content: SecureJobContent?
    /// The job's tag expression as written (`to_tag` or `tags`); nil: broadcast.
    public var audience: String?
    public var apps: [String]
    public var platforms: [Platform]
    public var sentAt: Date
    /// When a secure job's content is erased.
    public var expiresAt: Date?
    public var endedAt: Date?
    /// The result log's delivery counts when the job ended.
    public var deliveries: DeliveryTally?
    /// The job file's name (a secure job's copy in `done/` goes when its content does).
    public var file: String?

    public init(number: Int64 = 0, id: String, secure: Bool, content: SecureJobContent?, audience: String?, apps: [String],
                platforms: [Platform], sentAt: Date, expiresAt: Date?, endedAt: Date? = nil, deliveries: DeliveryTally? = nil, file: String? = nil) {
        self.number = number
        self.id = id
        self.secure = secure
        self.content = content
        self.audience = audience
        self.apps = apps
        self.platforms = platforms
        self.sentAt = sentAt
        self.expiresAt = expiresAt
        self.endedAt = endedAt
        self.deliveries = deliveries
        self.file = file
    }

    /// Whether a secure job's content has been erased (or its time is up, not yet swept).
    public func isExpired(at now: Date) -> Bool {
        secure && (content == nil || (expiresAt.map { $0 <= now } ?? false))
    }

    /// The platforms as stored (`apns,fcm`).
    static func platformList(_ p: [Platform]) -> String { p.map(\.rawValue).joined(separator: ",") }
    static func platforms(_ text: String) -> [Platform] { text.split(separator: ",").compactMap { Platform(rawValue: String($0)) } }
    static func appList(_ a: [String]) -> String { a.joined(separator: ",") }
    static func apps(_ text: String) -> [String] { text.split(separator: ",").map(String.init) }
}

/// One event as stored: whose notification (job number, device key, platform), which type
/// (`received`, `opened`, `dismissed`, or `fetched`: a secure fetch, for `Read`), the app it
/// counts for, when.
public struct StoredEvent: Sendable, Equatable {
    public var job: Int64
    public var device: Int64
    public var platform: Platform
    public var type: String
    public var app: String
    public var at: Date

    public init(job: Int64, device: Int64, platform: Platform, type: String, app: String, at: Date) {
        self.job = job
        self.device = device
        self.platform = platform
        self.type = type
        self.app = app
        self.at = at
    }

    /// Recorded when a secure notification's content is fetched (answers `Read`); no funnel step.
    public static let fetched = "fetched"
}

/// How many events of one type one app's devices of one platform reported for a job.
public struct EventCount: Sendable, Equatable {
    public var app: String
    public var platform: Platform
    public var type: String
    public var count: Int

    public init(app: String, platform: Platform, type: String, count: Int) {
        self.app = app
        self.platform = platform
        self.type = type
        self.count = count
    }
}
