import PushspoolKit
import Foundation
import PushspoolCore
import Synchronization

/// The desk as the dashboard asks it: a job's funnel is worked out at most once per `seconds`
/// however many pages poll it (a running job's funnel reads its result log; so does an ended
/// job's that is not tracked), and every other call goes straight to the desk. The numbers are
/// the desk's own, at most `seconds` old (`reader(lifetime:)`: another age for one caller).
final class FunnelCache: NotificationDesk {
    let desk: any NotificationDesk
    let seconds: Double
    private let cached = Mutex<[String: (at: Double, cost: Double, funnel: Funnel?)]>([:])
    /// An answer that took `cost` seconds is reused for `costFactor` times that at least, so that
    /// polling one job costs a server at most a fifth of a core whatever its log's size.
    static let costFactor = 5.0
    /// One computation at a time: pages asking together wait for it instead of repeating it.
    private let computing = Mutex(())

    init(desk: any NotificationDesk, seconds: Double = 1) {
        self.desk = desk
        self.seconds = seconds
    }

    func fetch(id: String, user: String?, now: Date) -> NotificationFetch { desk.fetch(id: id, user: user, now: now) }

    func record(_ events: [NotificationEvent], user: String?, now: Date) -> [NotificationEventStatus] {
        desk.record(events, user: user, now: now)
    }

    func funnel(job: String) throws(RegistryError) -> Funnel? { try funnel(job: job, lifetime: seconds) }

    /// The same cache, read with answers up to `lifetime` seconds old: for an ended job no app
    /// reports on (not tracked, not secure), whose funnel can no longer change.
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

    func funnel(job: String, lifetime seconds: Double) throws(RegistryError) -> Funnel? {
        func fresh() -> Funnel?? {
            let now = Date().timeIntervalSince1970
            return cached.withLock { c in c[job].flatMap { now - $0.at < max(seconds, $0.cost * Self.costFactor) ? .some($0.funnel) : nil } }
        }
        if let hit = fresh() { return hit }
        return try computing.withLock { _ throws(RegistryError) -> Funnel? in
            if let hit = fresh() { return hit }
            let started = Date().timeIntervalSince1970
            let funnel = try desk.funnel(job: job)
            let now = Date().timeIntervalSince1970
            cached.withLock { c in
                if c.count > 256 { c = c.filter { now - $0.value.at < 60 } }
                c[job] = (now, now - started, funnel)
            }
            return funnel
        }
    }
}
