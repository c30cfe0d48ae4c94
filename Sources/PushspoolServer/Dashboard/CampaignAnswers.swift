import Foundation
import Synchronization

/// A campaign page's answer (`GET /ui/api/jobs/{id}`), worked out once for every session that
/// polls it: a hundred open pages of one running campaign cost one computation a second, not a
/// hundred. While one is being worked out, the others take the last answer if it is recent, so
/// no request waits behind another's computation (and no thread is parked per waiting page).
final class CampaignAnswers: Sendable {
    private struct Held {
        var at: Double
        var answer: ServerResponse
    }

    /// How long an answer is served as it is: below the page's 1.5 s poll, so every poll of a
    /// live page sees a change within 2 s.
    let lifetime: Double
    /// How old an answer may be to be served while the next one is worked out.
    let staleness: Double
    private let held = Mutex<[String: Held]>([:])
    /// One computation at a time.
    private let computing = Mutex(())

    init(lifetime: Double = 1, staleness: Double = 5) {
        self.lifetime = lifetime
        self.staleness = staleness
    }

    func answer(id: String, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
                _ compute: () -> ServerResponse) -> ServerResponse {
        func recent(_ age: Double) -> ServerResponse? {
            let t = now()
            return held.withLock { h in h[id].flatMap { t - $0.at < age && t >= $0.at ? $0.answer : nil } }
        }
        func work() -> ServerResponse {
            if let fresh = recent(lifetime) { return fresh }
            let answer = compute()
            let t = now()
            held.withLock { h in
                if h.count >= 256 { h = h.filter { t - $0.value.at < staleness } }
                h[id] = Held(at: t, answer: answer)
            }
            return answer
        }
        if let fresh = recent(lifetime) { return fresh }
        if let stale = recent(staleness) {
            return computing.withLockIfAvailable { _ in work() } ?? stale
        }
        return computing.withLock { _ in work() }
    }
}
