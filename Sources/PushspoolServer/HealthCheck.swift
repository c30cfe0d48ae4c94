import PushspoolKit
import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `GET /healthz` answers: the check runs when a probe asks and the last answer is older
/// than `maxAge` (1 s), at most one at a time, and its answer serves every probe of the next
/// second: a load balancer's probes (or a flood of them) cost a lock each, one check a second at
/// most, and nothing at all while nobody asks (no timer). A probe that finds the answer stale
/// waits for the check (suspended, never on a server thread), at most `maxWait` seconds: a check
/// still running then is itself the answer (the dependency does not answer in time).
/// Unhealthy: the spool's `tmp/` or `incoming/` cannot be written (permissions, a full disk, a
/// spool deleted), or the registry does not answer.
public final class HealthCheck: Sendable {
    private struct State {
        var problem: String?
        var checkedAt: UInt64
        var running = false
        /// Counts checks: a late answer concerns the check it was armed for only.
        var round = 0
        var waiters: [@Sendable (String?) -> Void] = []
    }

    private let state: Mutex<State>
    private let check: @Sendable () -> String?
    private let maxAge: UInt64
    private let maxWait: Double
    private let queue = DispatchQueue(label: "pushspool.health", qos: .utility)

    /// `check` returns nil when healthy, else the reason (one sentence, no secret).
    public init(maxAge: Double = 1, maxWait: Double = 1, check: @escaping @Sendable () -> String?) {
        self.check = check
        self.maxAge = UInt64(maxAge * 1e9)
        self.maxWait = maxWait
        state = Mutex(State(problem: check(), checkedAt: DispatchTime.now().uptimeNanoseconds))
    }

    /// nil when healthy, else why not: at once when the last answer is fresh, else after a check.
    public func answer(_ completion: @escaping @Sendable (String?) -> Void) {
        let now = DispatchTime.now().uptimeNanoseconds
        let (fresh, start) = state.withLock { s -> (String??, Int?) in
            if now &- s.checkedAt < maxAge { return (.some(s.problem), nil) }
            s.waiters.append(completion)
            if s.running { return (nil, nil) }
            s.running = true
            s.round += 1
            return (nil, s.round)
        }
        if let fresh { return completion(fresh) }
        guard let round = start else { return }
        queue.async { [self] in
            let problem = check()
            finish(problem)
        }
        // A check that hangs: its waiters are answered after `maxWait` (not from `queue`, which
        // the check holds).
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + maxWait) { [self] in
            let late = state.withLock { s -> [@Sendable (String?) -> Void] in
                guard s.running, s.round == round else { return [] }
                defer { s.waiters = [] }
                return s.waiters
            }
            for w in late { w("the health check did not finish within \(maxWait) s") }
        }
    }

    private func finish(_ problem: String?) {
        let waiters = state.withLock { s -> [@Sendable (String?) -> Void] in
            s.problem = problem
            s.checkedAt = DispatchTime.now().uptimeNanoseconds
            s.running = false
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w(problem) }
    }

    /// The last answer, without checking (for tests and `status`-like callers).
    public var currentProblem: String? { state.withLock { $0.problem } }

    /// The usual check of `serve`: the spool's writers' folders and the registry, through the
    /// probe `status` uses (given the open registry, it asks PostgreSQL on a pooled connection).
    public static func spoolAndRegistry(spool: Spool, registry probe: RegistryProbe) -> @Sendable () -> String? {
        {
            for folder in [Spool.Folder.tmp, .incoming] {
                let path = spool.url(folder).path
                if access(path, W_OK) != 0 {
                    return "spool not writable: \(folder.rawValue)/: \(String(cString: strerror(errno)))"
                }
            }
            var fs = statvfs()
            if statvfs(spool.url(.tmp).path, &fs) == 0, fs.f_bavail == 0 {
                return "spool not writable: its disk is full"
            }
            return probe.problem().map { "registry unreachable: \($0)" }
        }
    }
}
