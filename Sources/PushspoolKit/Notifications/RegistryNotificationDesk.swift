import Foundation
import PushspoolCore
import Synchronization

/// `NotificationDesk` over a registry's `NotificationStore` (SQLite or PostgreSQL: with
/// PostgreSQL every host's desk answers every id, the MAC key being kept in the database).
///
/// An id is checked in one pass that does the same work for every id of the right length,
/// whatever it turns out to be: its job and its device are looked up, its MAC is computed and
/// compared in constant time, ownership is tested, and only then are the results combined. An
/// id of the wrong shape is checked as a stand-in device id (job 0, device 1), so it too is looked
/// up and MACed. Nothing answers earlier for a miss than for a hit. (A hub id, device key 0, is
/// checked against the caller's devices instead of one device: its work differs from a device
/// id's, but that tells nothing the id's own bytes do not.)
public final class RegistryNotificationDesk: NotificationDesk {
    let store: any NotificationStore
    let registry: any DeviceRegistry
    /// A job's outcomes per app and platform as its result log here or the shared queue holds
    /// them (nil: no log known).
    let results: @Sendable (String) -> Logged?

    /// What a job's result log says of its outcomes so far.
    public struct Logged: Sendable {
        /// Outcomes per app and platform, and the targets its job line planned.
        public var tally: DeliveryTally
        /// Its summary is written: the counts no longer change.
        public var ended: Bool

        public init(tally: DeliveryTally, ended: Bool) {
            self.tally = tally
            self.ended = ended
        }

        /// As a log read whole counted it.
        public init(_ c: ResultLogContents) {
            tally = c.byRoute
            tally.targets = c.targets
            ended = c.summary != nil
        }
    }
    let metrics: Metrics?
    private let mac = Mutex<NotificationMAC?>(nil)
    /// An event's `at` may run this far ahead of our clock (a phone's clock is seldom exact).
    public static let clockSkew: TimeInterval = 60

    public init(registry: any RegistryDatabase, metrics: Metrics? = nil,
                results: @escaping @Sendable (String) -> Logged? = { _ in nil }) {
        store = registry
        self.registry = registry
        self.metrics = metrics
        self.results = results
    }

    /// The registry's MAC key, read (or made) once.
    func keyed() throws(RegistryError) -> NotificationMAC {
        if let m = mac.withLock({ $0 }) { return m }
        let made = NotificationMAC(key: try store.notificationKey())
        mac.withLock { $0 = made }
        return made
    }

    // MARK: Checking an id

    /// What checking an id found.
    struct Checked {
        var id: NotificationID
        var job: TrackedJob
        /// The device whose notification it is: the id's own, or for a hub id the caller's device
        /// that the job's audience matches (nil: a hub id asked by a service).
        var device: Device?
        /// The device key events are recorded under (a hub id: the caller's device's).
        var eventKey: Int64
        var app: String
    }

    /// The job and device an id names when it verifies and `user` (nil: a service) owns it; nil
    /// otherwise. `jobs`: tracked jobs read before in this call (a batch reads each once).
    func check(_ text: String, user: String?, jobs: inout [Int64: TrackedJob?]) throws(RegistryError) -> Checked? {
        let keyed = try keyed()
        let parsed = NotificationID.parse(text)
        let id = parsed ?? NotificationID(job: 0, device: 1, platform: .apns, mac: [UInt8](repeating: 0, count: NotificationID.macBytes))
        let job: TrackedJob?
        if let known = jobs[id.job] {
            job = known
        } else {
            job = try store.trackedJob(number: id.job)
            jobs[id.job] = job
        }
        // A device id's device (also for a stand-in: the same lookup); a hub id's owner next.
        let own = id.isHub ? nil : try store.device(key: id.device)
        let verified = keyed.verifies(id, installationID: own?.id ?? "")
        var device = own.map { ($0, id.device) }
        let owned: Bool
        if id.isHub {
            device = try user.map { u throws(RegistryError) in try hubDevice(of: u, job: job, platform: id.platform) } ?? nil
            owned = user == nil || device != nil
        } else {
            owned = user == nil || own?.tags.contains("username:\(user ?? "")") == true
        }
        let platformMatches = own.map { $0.platform == id.platform } ?? id.isHub
        // Combined only now, each term already computed: no lookup was skipped for a miss.
        let terms = [parsed != nil, verified, job != nil, owned, platformMatches]
        let ok = terms.reduce(true) { $0 && $1 }
        guard ok, let job else { return nil }
        return Checked(id: id, job: job, device: device?.0, eventKey: device?.1 ?? 0,
                       app: device?.0.app ?? job.apps.first ?? AppConfig.implicitID)
    }

    /// One of `user`'s devices of `platform` in the job's apps that the job's audience matches
    /// (the hub resolved the audience; this is the same test on our copy of its registrations).
    private func hubDevice(of user: String, job: TrackedJob?, platform: Platform) throws(RegistryError) -> (Device, Int64)? {
        guard let job else {
            // The same query a real hub id makes, for nothing.
            _ = try registry.count(platforms: [platform], apps: nil, tokenKind: nil, matching: .tag("username:\(user)"))
            return nil
        }
        let audience = job.audience.flatMap { try? TagExpression.parse($0) }
        var found: (Device, Int64)?
        do {
            try registry.forEach(platforms: [platform], apps: Set(job.apps), tokenKind: nil, matching: .tag("username:\(user)"),
                                 pageSize: 100, after: 0) { d, key in
                if audience.map({ $0.matches(Set(d.tags)) }) ?? true {
                    found = (d, key)
                    return false
                }
                return true
            }
        } catch {
            throw RegistryError.from(error)
        }
        return found
    }

    // MARK: NotificationDesk

    public func fetch(id: String, user: String?, now: Date) -> NotificationFetch {
        do throws(RegistryError) {
            return try fetching(id: id, user: user, now: now)
        } catch {
            // A registry outage is no verdict on the id: not a miss (the app would drop a real
            // notification), and no content served without its `received` counted.
            return .unavailable(error.kind)
        }
    }

    private func fetching(id: String, user: String?, now: Date) throws(RegistryError) -> NotificationFetch {
        var jobs: [Int64: TrackedJob?] = [:]
        guard let checked = try check(id, user: user, jobs: &jobs), checked.job.secure else { return .notFound }
        let job = checked.job
        guard !job.isExpired(at: now), let content = job.content else { return .gone }
        let shown = content.shown(in: checked.device?.lang)
        let events = [StoredEvent(job: job.number, device: checked.eventKey, platform: checked.id.platform, type: StoredEvent.fetched,
                                  app: checked.app, at: now),
                      StoredEvent(job: job.number, device: checked.eventKey, platform: checked.id.platform,
                                  type: NotificationEventType.received.rawValue, app: checked.app, at: now)]
        // Fetched before: nothing to write (a read, no write lock), and nothing counts again.
        let before = try store.hasEvent(job: job.number, device: checked.eventKey, platform: checked.id.platform,
                                        type: StoredEvent.fetched)
        let inserted = before ? [false, false] : try store.recordEvents(events)
        if inserted.count == 2, inserted[1] {
            metrics?.notificationEvent(app: checked.app, platform: checked.id.platform.rawValue, type: NotificationEventType.received.rawValue)
        }
        let read = inserted.first.map { !$0 } ?? true
        return .content(SecureContent(id: id, job: job.id, app: checked.app, platform: checked.id.platform, title: shown.title,
                                      message: shown.message, data: content.data.isEmpty ? nil : content.data, url: content.url,
                                      image: content.image, sentAt: job.sentAt, expiresAt: job.expiresAt ?? job.sentAt),
                        read: read)
    }

    public func record(_ events: [NotificationEvent], user: String?, now: Date) -> [NotificationEventStatus] {
        do throws(RegistryError) {
            return try recording(events, user: user, now: now)
        } catch {
            // Nothing of the batch was recorded: all of it may be reported again (counted once).
            return [NotificationEventStatus](repeating: .unavailable(error.kind), count: events.count)
        }
    }

    private func recording(_ events: [NotificationEvent], user: String?, now: Date) throws(RegistryError) -> [NotificationEventStatus] {
        var jobs: [Int64: TrackedJob?] = [:]
        var statuses = [NotificationEventStatus](repeating: .notFound, count: events.count)
        var pending: [(index: Int, event: StoredEvent)] = []
        for (i, event) in events.enumerated() {
            guard let checked = try check(event.id, user: user, jobs: &jobs), !checked.job.isExpired(at: now) else { continue }
            let at = event.at ?? now
            if at > now.addingTimeInterval(Self.clockSkew) {
                statuses[i] = .invalid(field: "at", why: "is in the future")
                continue
            }
            if at < checked.job.sentAt.addingTimeInterval(-Self.clockSkew) {
                statuses[i] = .invalid(field: "at", why: "is older than the notification's job")
                continue
            }
            pending.append((i, StoredEvent(job: checked.job.number, device: checked.eventKey, platform: checked.id.platform,
                                           type: event.type.rawValue, app: checked.app, at: at)))
        }
        guard !pending.isEmpty else { return statuses }
        let inserted = try store.recordEvents(pending.map(\.event))
        for (p, fresh) in zip(pending, inserted) {
            statuses[p.index] = fresh ? .recorded : .duplicate
            if fresh { metrics?.notificationEvent(app: p.event.app, platform: p.event.platform.rawValue, type: p.event.type) }
        }
        return statuses
    }

    public func funnel(job: String) throws(RegistryError) -> Funnel? {
        let tracked = try store.trackedJob(id: job)
        var tally = tracked?.deliveries
        if tally == nil, let log = results(job) {
            tally = log.tally
            // An ended job's counts no longer change: kept, so no host reads its log again.
            if log.ended, tracked != nil { try store.saveDeliveries(id: job, log.tally) }
        }
        guard tracked != nil || tally != nil else { return nil }
        var funnel = Funnel(job: job)
        for (route, c) in tally?.routes ?? [:] {
            funnel.add(app: route.app, platform: route.platform) { counts in
                counts.targets += c.finished
                counts.sent += c.sent
                counts.delivered += c.delivered
            }
        }
        if let tracked {
            for e in try store.eventCounts(job: tracked.number) {
                guard let type = NotificationEventType(rawValue: e.type) else { continue }
                funnel.add(app: e.app, platform: e.platform) { counts in
                    switch type {
                    case .received: counts.received += e.count
                    case .opened: counts.opened += e.count
                    case .dismissed: counts.dismissed += e.count
                    }
                }
            }
        }
        // Targets planned but never finished (a running or cancelled job) count in the total.
        if let planned = tally?.targets, planned > funnel.total.targets { funnel.total.targets = planned }
        return funnel
    }
}

extension Funnel {
    /// Adds to one app's and one platform's counts and to the total.
    mutating func add(app: String, platform: Platform, _ change: (inout Counts) -> Void) {
        change(&total)
        change(&byApp[app, default: Counts()])
        change(&byPlatform[platform, default: Counts()])
    }
}
