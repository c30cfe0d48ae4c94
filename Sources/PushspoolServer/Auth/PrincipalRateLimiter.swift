import PushspoolKit
import Synchronization

/// `http.rate_limit_per_minute` per user and per token, as a generic cell rate algorithm (a
/// token bucket kept as one number): a principal may send `perMinute` requests at once, and then
/// one each `60 / perMinute` seconds; a request beyond that is refused with the seconds until
/// the next slot frees.
///
/// The hot path is one lock and one dictionary lookup by a name the caller already holds: no
/// allocation once a principal has been seen. Only verified principals get here, so the table
/// is bounded by the users and tokens files; entries of principals gone quiet are swept when it
/// doubles.
final class PrincipalRateLimiter: Sendable {
    private struct State {
        /// When each principal's bucket is full again ("theoretical arrival time"), by name.
        var users: [String: Double] = [:]
        var services: [String: Double] = [:]
        var sweepAt = 1024
    }

    let perMinute: Int
    private let interval: Double
    private let tolerance: Double
    private let state = Mutex(State())

    init(perMinute: Int) {
        self.perMinute = perMinute
        interval = 60 / Double(perMinute)
        tolerance = 60 - interval
    }

    /// Counts one request of `principal`: nil when it is allowed, else the seconds to wait.
    func admit(_ principal: Principal, now: Double) -> Int? {
        state.withLock { s in
            switch principal {
            case .user(let name): return admit(name, in: &s.users, sweepAt: &s.sweepAt, now: now)
            case .service(let name): return admit(name, in: &s.services, sweepAt: &s.sweepAt, now: now)
            // A login is counted once; the session's own requests are not rate-limited here
            // (a dashboard polls), only its logins are, by the address throttle.
            case .operator: return nil
            }
        }
    }

    private func admit(_ name: String, in table: inout [String: Double], sweepAt: inout Int, now: Double) -> Int? {
        let due = max(table[name] ?? now, now)
        if due - now > tolerance {
            return max(1, Int((due - tolerance - now).rounded(.up)))
        }
        if table[name] == nil && table.count >= sweepAt {
            table = table.filter { $0.value > now }
            sweepAt = max(1024, table.count * 2)
        }
        table[name] = due + interval
        return nil
    }
}
