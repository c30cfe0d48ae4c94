import Foundation
import PushspoolCore

/// What the front door asks of the notifications a job sent, once they left the provider: a
/// secure job's content fetched by the device it went to, the events apps report back
/// (received, opened, dismissed), and each job's funnel. One implementation serves both
/// registries (SQLite and PostgreSQL): with PostgreSQL any host's `serve` answers any id.
///
/// - Ownership: `user` is the Basic-authenticated caller; a notification is its user's when the
///   device it was sent to holds `username:<user>` (for a hub-routed id: one of the user's devices
///   matches the job's audience). `user == nil` is a trusted service (a bearer token).
/// - Indistinguishable misses: an unknown id, a forged id (its MAC does not verify) and another
///   user's id are all `.notFound`, reached through the same work (the MAC is compared in constant
///   time and a miss still does the lookups a hit does), so neither the answer nor its timing tells
///   them apart.
/// - Idempotence: each (id, type) counts once, however often it is reported; a successful
///   `fetch` counts as `received`.
/// - Thread safety: every method may be called from any thread, concurrently.
public protocol NotificationDesk: AnyObject, Sendable {
    /// The content of a secure notification as `user`'s device would have shown it (its language
    /// from the job's `localized`, the `From` prefix), and whether it was fetched before.
    func fetch(id: String, user: String?, now: Date) -> NotificationFetch
    /// Records `events` (at most `NotificationEvent.maxBatch`), answering one status per event,
    /// in order. A batch over the limit is refused whole by the caller before it gets here. When
    /// the registry fails, nothing of the batch is recorded and every event is `.unavailable`.
    func record(_ events: [NotificationEvent], user: String?, now: Date) -> [NotificationEventStatus]
    /// The funnel of job `job` (nil: no such job known here or in the shared registry).
    func funnel(job: String) throws(RegistryError) -> Funnel?
}

/// The answer to a fetch.
public enum NotificationFetch: Sendable, Equatable {
    case content(SecureContent, read: Bool)
    /// Unknown, forged, or another user's: one answer for all three.
    case notFound
    /// Its content was erased after `secure_ttl_seconds`.
    case gone
    /// The registry could not be read or written now (busy past its wait, or unreachable): no
    /// verdict on the id, and nothing counted; asking again later is safe.
    case unavailable(RegistryError.Kind)
}

/// A secure notification's content as one device would have shown it.
public struct SecureContent: Sendable, Equatable {
    public var id: String
    public var job: String
    public var app: String
    public var platform: Platform
    public var title: String?
    /// The text as shown: the `From` prefix and the device's language applied.
    public var message: String
    public var data: [String: String]?
    public var url: String?
    public var image: String?
    public var sentAt: Date
    public var expiresAt: Date

    public init(id: String, job: String, app: String, platform: Platform, title: String?, message: String,
                data: [String: String]?, url: String?, image: String?, sentAt: Date, expiresAt: Date) {
        self.id = id
        self.job = job
        self.app = app
        self.platform = platform
        self.title = title
        self.message = message
        self.data = data
        self.url = url
        self.image = image
        self.sentAt = sentAt
        self.expiresAt = expiresAt
    }
}

/// What an app reports of a notification.
public enum NotificationEventType: String, Sendable, Hashable, CaseIterable {
    case received, opened, dismissed
}

/// One reported event; `at` nil: now.
public struct NotificationEvent: Sendable, Equatable {
    /// The most events one `POST /v1/events` may carry.
    public static let maxBatch = 1000

    public var id: String
    public var type: NotificationEventType
    public var at: Date?

    public init(id: String, type: NotificationEventType, at: Date?) {
        self.id = id
        self.type = type
        self.at = at
    }
}

/// What became of one reported event.
public enum NotificationEventStatus: Sendable, Equatable {
    /// Counted now.
    case recorded
    /// This (id, type) was counted before: not again.
    case duplicate
    /// Unknown, forged, another user's, or kept past `receipts.keep_days`.
    case notFound
    /// Refused, naming the field (an `at` in the future or older than the job).
    case invalid(field: String, why: String)
    /// The registry could not be read or written now: nothing of the batch was recorded, and
    /// reporting it again later is safe (each (id, type) counts once).
    case unavailable(RegistryError.Kind)
}

/// targets → sent → delivered (the provider accepted) → received (the device said so) → opened.
public struct Funnel: Sendable, Equatable {
    public struct Counts: Sendable, Equatable {
        public var targets = 0
        public var sent = 0
        public var delivered = 0
        public var received = 0
        public var opened = 0
        public var dismissed = 0

        public init() {}
    }

    public var job: String
    public var total = Counts()
    public var byApp: [String: Counts] = [:]
    public var byPlatform: [Platform: Counts] = [:]

    public init(job: String) {
        self.job = job
    }
}
