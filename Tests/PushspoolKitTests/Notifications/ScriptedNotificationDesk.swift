import Foundation
import Synchronization
@testable import PushspoolKit
import PushspoolCore

/// A `NotificationDesk` that answers from a script and remembers every call: what the routes
/// asked, for whom, and how often (a miss must still reach the desk).
final class ScriptedNotificationDesk: NotificationDesk {
    struct Call: Equatable {
        var method: String
        var ids: [String]
        var user: String?
    }

    private struct State {
        var contents: [String: (owner: String, content: SecureContent)] = [:]
        var gone: Set<String> = []
        var counted: Set<String> = []
        var read: Set<String> = []
        var invalidAt: Set<String> = []
        var funnels: [String: Funnel] = [:]
        var funnelFails = false
        var calls: [Call] = []
    }

    private let state = Mutex(State())

    /// `content` belongs to `owner`; a service (user nil) may read any.
    func add(_ content: SecureContent, owner: String) { state.withLock { $0.contents[content.id] = (owner, content) } }
    func expire(_ id: String) { state.withLock { $0.gone.insert(id) } }
    /// Events for `id` carrying an `at` are refused as older than the job.
    func refuseAt(_ id: String) { state.withLock { _ = $0.invalidAt.insert(id) } }
    func setFunnel(_ f: Funnel) { state.withLock { $0.funnels[f.job] = f } }
    func failFunnels() { state.withLock { $0.funnelFails = true } }

    var calls: [Call] { state.withLock { $0.calls } }
    var counted: Set<String> { state.withLock { $0.counted } }

    func fetch(id: String, user: String?, now: Date) -> NotificationFetch {
        state.withLock { s in
            s.calls.append(Call(method: "fetch", ids: [id], user: user))
            if s.gone.contains(id) { return .gone }
            guard let entry = s.contents[id], user == nil || entry.owner == user else { return .notFound }
            let wasRead = s.read.contains(id)
            s.read.insert(id)
            s.counted.insert("\(id) received")
            return .content(entry.content, read: wasRead)
        }
    }

    func record(_ events: [NotificationEvent], user: String?, now: Date) -> [NotificationEventStatus] {
        state.withLock { s in
            s.calls.append(Call(method: "record", ids: events.map(\.id), user: user))
            return events.map { e in
                guard let entry = s.contents[e.id], user == nil || entry.owner == user else { return .notFound }
                if e.at != nil, s.invalidAt.contains(e.id) { return .invalid(field: "at", why: "older than the job") }
                return s.counted.insert("\(e.id) \(e.type.rawValue)").inserted ? .recorded : .duplicate
            }
        }
    }

    func funnel(job: String) throws(RegistryError) -> Funnel? {
        let (fails, f) = state.withLock { ($0.funnelFails, $0.funnels[job]) }
        if fails { throw RegistryError("scripted: the registry is down", kind: .unavailable) }
        return f
    }
}
