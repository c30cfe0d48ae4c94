import PushspoolKit
import Foundation
import PushspoolCore
import Synchronization

/// The desk as the dashboard asks it. A job's funnel is the desk's own answer, reused while the
/// job's result log has not changed (and for `lifetime` at most: events arrive without it
/// changing), and while a job runs at most once a second and never more often than
/// `costFactor` times what it took (a running job's funnel reads its log, so polling a big one
/// costs a server at most a fifth of a core). Every other call goes straight to the desk.
final class FunnelCache: NotificationDesk {
    private struct Entry {
        var at: Double
        var cost: Double
        var logSize: Int64
        var funnel: Funnel?
    }

    let desk: any NotificationDesk
    let lifetime: Double
    /// The size of a job's result log now (-1: none).
    private let logSize: @Sendable (String) -> Int64
    private let cached = Mutex<[String: Entry]>([:])
    /// One computation at a time: pages asking together wait for it instead of repeating it.
    private let computing = Mutex(())
    static let costFactor = 5.0

    init(desk: any NotificationDesk, lifetime: Double = 1, logSize: @escaping @Sendable (String) -> Int64) {
        self.desk = desk
        self.lifetime = lifetime
        self.logSize = logSize
    }

    func fetch(id: String, user: String?, now: Date) -> NotificationFetch { desk.fetch(id: id, user: user, now: now) }

    func record(_ events: [NotificationEvent], user: String?, now: Date) -> [NotificationEventStatus] {
        desk.record(events, user: user, now: now)
    }

    func funnel(job: String) throws(RegistryError) -> Funnel? { try funnel(job: job, lifetime: lifetime) }

    /// The same cache read with answers up to `lifetime` seconds old while the log is unchanged:
    /// for an ended job no app reports on (not tracked, not secure).
    func reader(lifetime: Double) -> any NotificationDesk { Reader(cache: self, lifetime: lifetime) }

    private final class Reader: NotificationDesk {
        let cache: FunnelCache
        let lifetime: Double
        init(cache: FunnelCache, lifetime: Double) {
            self.cache = cache
            self.lifetime = lifetime
        }
        func fetch(id: String, user: String?, now: Date) -> NotificationFetch { cache.fetch(id: id, user: user, now: now) }
        func record(_ events: [NotificationEvent], user: String?, now: Date) -> [NotificationEventStatus] { cache.record(events, user: user, now: now) }
        func funnel(job: String) throws(RegistryError) -> Funnel? { try cache.funnel(job: job, lifetime: lifetime) }
    }

    func funnel(job: String, lifetime: Double) throws(RegistryError) -> Funnel? {
        func fresh() -> Funnel?? {
            let now = Date().timeIntervalSince1970
            let size = logSize(job)
            return cached.withLock { c -> Funnel?? in
                guard let e = c[job] else { return nil }
                let age = now - e.at
                if e.logSize == size && age < lifetime { return .some(e.funnel) }
                // The log grew (the job runs): asked again once the throttle allows.
                if e.logSize != size && size > e.logSize && age < max(self.lifetime, e.cost * Self.costFactor) { return .some(e.funnel) }
                return nil
            }
        }
        if let hit = fresh() { return hit }
        return try computing.withLock { _ throws(RegistryError) -> Funnel? in
            if let hit = fresh() { return hit }
            let size = logSize(job)
            let started = Date().timeIntervalSince1970
            let funnel = try desk.funnel(job: job)
            let now = Date().timeIntervalSince1970
            cached.withLock { c in
                if c.count > 256 { c = c.filter { now - $0.value.at < 60 } }
                c[job] = Entry(at: now, cost: now - started, logSize: size, funnel: funnel)
            }
            return funnel
        }
    }
}
