import Foundation
import PushspoolCore

/// The device registry's contract, the same on every backend: `SQLiteRegistry` (one SQLite file, one
/// host) and `PostgresRegistry` (one PostgreSQL database shared by dispatchers on several hosts).
/// The shared registry suite runs against both. Job-id claims (`JobClaims`) and bulk import
/// (`RegistryImporter`) are contracts of their own: most users of a registry need neither.
///
/// - Errors: every method throws `RegistryError` only (typed), so a caller reads its `kind`
///   (refused, busy, unavailable) without a downcast. `forEach` also passes on what its `body`
///   throws, so it stays untyped.
/// - Thread safety: every method may be called from any thread, concurrently.
/// - Registrations: `upsert` by installation id; a nil id reuses the id already holding the
///   handle, else a new lowercase UUID; a handle registered under another id moves (that row is
///   deleted, never duplicated); tags are stored sorted and deduplicated.
/// - Pruning: `removeGone` deletes only a device that still has that handle and was not updated
///   after `since`.
/// - Audiences: `forEach` streams in a stable order, a bounded page at a time (keyset
///   pagination), holding nothing locked while `body` runs; `count` agrees with it.
/// - Broadcast channels: each app's, kept here (`APNsChannelStore`).
/// - `close` is idempotent; afterwards every call throws `registry is closed`.
public protocol DeviceRegistry: APNsChannelStore {
    /// Where it lives, for messages (a path, or a URI without its password).
    var location: String { get }
    /// How many calls it serves at once (its connections): SQLite 1 (one writer), PostgreSQL its
    /// pool's size. Callers size their own lanes by it.
    var concurrentCalls: Int { get }
    /// The same registry as one several hosts share (PostgreSQL), with what the engine builds on
    /// that: the process's one connection pool, the queue's cuts, a health check on a pooled
    /// connection. nil for a registry of one host (SQLite).
    var shared: (any SharedRegistry)? { get }

    @discardableResult
    func upsert(_ r: Registration, now: Date) throws(RegistryError) -> Device
    /// `upsert`, also telling which other installation id held this handle before (moved here).
    func upsertReportingMove(_ r: Registration, now: Date) throws(RegistryError) -> (device: Device, movedFrom: String?)
    @discardableResult
    func remove(id: String) throws(RegistryError) -> Bool
    /// The device holding `handle` in `app` (nil: the default app); a handle is unique per app
    /// and platform.
    @discardableResult
    func remove(handle: String, app: String?) throws(RegistryError) -> Bool
    @discardableResult
    func removeGone(id: String, handle: String, since: Date?) throws(RegistryError) -> Bool
    /// `removeGone` for many devices at once (one transaction where the backend has them).
    /// Returns how many were deleted.
    @discardableResult
    func removeGone(_ devices: [GoneDevice]) throws(RegistryError) -> Int
    /// A service named the device's new handle (ADM's canonical id): the device holding
    /// `change.handle` under `change.id` gets `change.canonical` instead. When another device of
    /// its app and platform already holds the new handle, this one is removed (the other is the
    /// same device, registered again). False when it holds another handle by now (it
    /// re-registered meanwhile): nothing changes.
    @discardableResult
    func replaceHandle(_ change: HandleChange, now: Date) throws(RegistryError) -> Bool
    func device(id: String) throws(RegistryError) -> Device?
    func device(handle: String, app: String?) throws(RegistryError) -> Device?
    /// Devices in ascending order of a key of the registry's own (SQLite's rowid, PostgreSQL's
    /// `seq`), those after `after` only; `body` gets each with its key (a place to resume from).
    /// `apps`: those of these apps only (nil: every app). `tokenKind`: APNs devices of this token
    /// kind only (a send's push type; nil: every kind); other platforms' devices are not affected.
    /// `through`: keys up to this one only (a chunk of the shared queue); `lastPage` runs once the
    /// page holding the last of them is read, before `body` gets its devices.
    func forEach(platforms: Set<Platform>, apps: Set<String>?, tokenKind: APNsTokenKind?, matching: TagExpression?, pageSize: Int,
                 after: Int64, through: Int64, lastPage: () -> Void, _ body: (Device, Int64) throws -> Bool) throws
    func count(platforms: Set<Platform>, apps: Set<String>?, tokenKind: APNsTokenKind?, matching: TagExpression?) throws(RegistryError) -> Int
    /// `forEach` over the devices of one app with one registered `tz` (nil: those with none):
    /// a `local_time` wave reads its zones one by one, each through an index where the backend
    /// has one, not the whole audience once per wave.
    func forEach(platforms: Set<Platform>, zone: ZoneKey, tokenKind: APNsTokenKind?, matching: TagExpression?, pageSize: Int,
                 after: Int64, _ body: (Device, Int64) throws -> Bool) throws
    /// How many of those devices each (app, `tz`) pair has (tz nil: none registered), counted by
    /// the database (`GROUP BY`): what `devices --by tz` shows and `local_time` jobs plan from.
    func zoneCounts(platforms: Set<Platform>, apps: Set<String>?, tokenKind: APNsTokenKind?, matching: TagExpression?) throws(RegistryError) -> [ZoneCount]
    /// Records `id` as handed out to `owner` at `now` (the tutorial's `POST /api/register`), so
    /// that any process sharing the registry accepts a registration under it later. Reserving
    /// an id again replaces its owner and time. Reservations older than `IDReservation.lifetime`
    /// are deleted now and then (at most once a minute per process).
    func reserve(id: String, owner: String, now: Date) throws(RegistryError)
    /// The reservation of `id`, however old (the caller judges its age); nil: none. `upsert`
    /// with that id consumes it, and so does `releaseReservation`.
    func reservation(id: String) throws(RegistryError) -> IDReservation?
    func releaseReservation(id: String) throws(RegistryError)
    func close()
}

/// Send-job ids claimed by one owner (a host and spool), so that dispatchers sharing a registry
/// send each job once.
public protocol JobClaims: AnyObject, Sendable {
    /// Claims a send job's id for `owner`. True: this owner has it (claimed now, or earlier by the
    /// same owner: a resume). False: another owner claimed it first, so this copy is a duplicate.
    /// A single-host registry claims every id (the spool's result log already tells duplicates
    /// apart there). Ids that differ only by case are one id.
    func claimJob(id: String, owner: String) throws(RegistryError) -> Bool
}

/// Bulk import of a JSON Lines file of registrations (`pushspool import`); both backends read the
/// file with `RegistrationFile`.
public protocol RegistryImporter: AnyObject, Sendable {
    /// JSON Lines registrations in one transaction; bad lines refused with their number and field.
    func importJSONL(contentsOf url: URL, now: Date, progress: (@Sendable (Int) -> Void)?) throws(RegistryError) -> RegistryImportReport
}

/// A whole registry backend, as the CLI opens it: the registry proper, job claims and import.
public typealias RegistryDatabase = DeviceRegistry & JobClaims & RegistryImporter & FrequencyCapCounts & NotificationStore

/// An installation id handed out before its device registered.
public struct IDReservation: Sendable, Equatable {
    public var owner: String
    public var at: Date

    public init(owner: String, at: Date) {
        self.owner = owner
        self.at = at
    }

    /// A client registers within moments of getting its id; a week covers one that was offline.
    public static let lifetime: TimeInterval = 7 * 24 * 3600
    /// How often a process deletes expired reservations, at most.
    static let purgeInterval: TimeInterval = 60
}

/// One app's devices with one registered zone (nil: none registered).
public struct ZoneKey: Sendable, Hashable {
    public var app: String
    public var tz: String?

    public init(app: String, tz: String?) {
        self.app = app
        self.tz = tz
    }
}

/// Devices of one app in one registered zone (nil: none registered).
public struct ZoneCount: Sendable, Equatable {
    public var app: String
    public var tz: String?
    public var devices: Int
    public var key: ZoneKey { ZoneKey(app: app, tz: tz) }

    public init(app: String, tz: String?, devices: Int) {
        self.app = app
        self.tz = tz
        self.devices = devices
    }
}

/// A device a service reported gone: deleted only if it still has `handle` and was not updated
/// after `since`.
public struct GoneDevice: Sendable {
    public var id: String
    public var handle: String
    public var since: Date?

    public init(id: String, handle: String, since: Date?) {
        self.id = id
        self.handle = handle
        self.since = since
    }
}

/// A device whose service answered with another handle for it (`DeviceRegistry.replaceHandle`).
public struct HandleChange: Sendable, Equatable {
    public var id: String
    /// The handle sent to.
    public var handle: String
    /// The handle the service named.
    public var canonical: String

    public init(id: String, handle: String, canonical: String) {
        self.id = id
        self.handle = handle
        self.canonical = canonical
    }
}

extension DeviceRegistry {
    public var concurrentCalls: Int { 1 }
    public var shared: (any SharedRegistry)? { nil }

    @discardableResult
    public func removeGone(_ devices: [GoneDevice]) throws(RegistryError) -> Int {
        var removed = 0
        for d in devices where try removeGone(id: d.id, handle: d.handle, since: d.since) { removed += 1 }
        return removed
    }

    @discardableResult
    public func upsert(_ r: Registration) throws(RegistryError) -> Device { try upsert(r, now: Date()) }
    public func upsertReportingMove(_ r: Registration) throws(RegistryError) -> (device: Device, movedFrom: String?) {
        try upsertReportingMove(r, now: Date())
    }
    public func forEach(platforms: Set<Platform>, apps: Set<String>? = nil, tokenKind: APNsTokenKind? = nil, matching: TagExpression?,
                        pageSize: Int = 1000, _ body: (Device) throws -> Bool) throws {
        try forEach(platforms: platforms, apps: apps, tokenKind: tokenKind, matching: matching, pageSize: pageSize, after: 0) { device, _ in
            try body(device)
        }
    }
    public func forEach(platforms: Set<Platform>, apps: Set<String>? = nil, tokenKind: APNsTokenKind? = nil, matching: TagExpression?,
                        after: Int64, through: Int64 = .max, lastPage: () -> Void = {}, _ body: (Device, Int64) throws -> Bool) throws {
        try forEach(platforms: platforms, apps: apps, tokenKind: tokenKind, matching: matching, pageSize: 1000, after: after,
                    through: through, lastPage: lastPage, body)
    }
    public func forEach(platforms: Set<Platform>, apps: Set<String>? = nil, tokenKind: APNsTokenKind? = nil, matching: TagExpression?,
                        pageSize: Int, after: Int64, _ body: (Device, Int64) throws -> Bool) throws {
        try forEach(platforms: platforms, apps: apps, tokenKind: tokenKind, matching: matching, pageSize: pageSize, after: after,
                    through: .max, lastPage: {}, body)
    }
    public func count(platforms: Set<Platform>, apps: Set<String>? = nil, matching: TagExpression?) throws(RegistryError) -> Int {
        try count(platforms: platforms, apps: apps, tokenKind: nil, matching: matching)
    }
    /// The default app's device holding `handle`.
    public func device(handle: String) throws(RegistryError) -> Device? { try device(handle: handle, app: nil) }
    @discardableResult
    public func remove(handle: String) throws(RegistryError) -> Bool { try remove(handle: handle, app: nil) }
}

extension RegistryImporter {
    public func importJSONL(contentsOf url: URL, now: Date = Date()) throws(RegistryError) -> RegistryImportReport {
        try importJSONL(contentsOf: url, now: now, progress: nil)
    }
}

/// What an import did: devices written, and the lines it refused (each with its line number and
/// the field at fault; the first `keptRefusals` are kept, all are counted).
public struct RegistryImportReport: Sendable {
    public var imported = 0
    public var refused: [String] = []
    public var refusedCount = 0
    static let keptRefusals = 1000
    /// Handles the file gave to another installation id than the one holding them (that row was
    /// deleted: one device, one row), and the first few as `old-id → new-id`.
    public var moved = 0
    public var firstMoves: [String] = []
    static let keptMoves = 3

    mutating func noteMove(from old: String, to new: String) {
        moved += 1
        if firstMoves.count < Self.keptMoves { firstMoves.append("\(old) → \(new)") }
    }

    mutating func refuse(_ message: String) {
        refusedCount += 1
        if refused.count < Self.keptRefusals { refused.append(message) }
    }
}

/// The keyset page loop both registries stream devices with: `fetch(after)` reads the page of
/// at most `limit` rows after a key, in key order; pages follow until one is short or reaches
/// `through`, and `body` gets the rows up to `through` (false from it stops the loop).
/// `lastPage` runs once the last page is read, before its rows go to `body`.
enum KeysetPages {
    static func run<Row>(after start: Int64, through: Int64, limit: Int, lastPage: () -> Void, key: (Row) -> Int64,
                         fetch: (Int64) throws -> [Row], _ body: (Row) throws -> Bool) throws {
        var after = start
        while true {
            let page = try fetch(after)
            let final = page.count < limit || page.last.map { key($0) >= through } ?? true
            if final { lastPage() }
            for row in page {
                if key(row) > through { return }
                if try !body(row) { return }
            }
            guard !final, let last = page.last else { return }
            after = key(last)
        }
    }
}

/// Opens the registry a `registry` config value names: a `postgresql://` or `postgres://` URI
/// (or a libpq `key=value` string starting with `host=`/`dbname=`), else a SQLite file path.
public enum RegistryLocation {
    public static func isPostgres(_ value: String) -> Bool {
        if value.hasPrefix("postgresql://") || value.hasPrefix("postgres://") { return true }
        // A libpq keyword string: `host=db.example dbname=push user=… password=…`.
        let keywords = ["host=", "hostaddr=", "dbname=", "user=", "port=", "service="]
        return keywords.contains { value.hasPrefix($0) } && !value.contains("/registry.sqlite")
    }

    /// The value with any password shown as `***` (`Redaction.connectionString`), for printing.
    public static func redacted(_ value: String) -> String { Redaction.connectionString(value) }

    /// How a registry is shown to a person: a PostgreSQL registry as its URI with the password
    /// masked (never as a path), a SQLite registry as its resolved path.
    public static func shown(_ config: Config) -> String {
        let value = config.registryPath
        return isPostgres(value) ? Redaction.connectionString(value) : config.resolve(value).path
    }
}
