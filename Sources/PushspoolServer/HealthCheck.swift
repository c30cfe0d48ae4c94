import PushspoolKit
import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `GET /healthz` answers: checked once a second on a timer, so that a load balancer's
/// probes (or a flood of them) cost a lock and never a registry query each.
/// Unhealthy: the spool's `tmp/` or `incoming/` cannot be written (permissions, a full disk, a
/// spool deleted), or the registry does not answer.
public final class HealthCheck: @unchecked Sendable {   // the timer is only touched in init and deinit
    private let problem = Mutex<String?>("not checked yet")
    private let check: @Sendable () -> String?
    private let timer: any DispatchSourceTimer

    /// `check` returns nil when healthy, else the reason (one sentence, no secret).
    public init(interval: Double = 1, check: @escaping @Sendable () -> String?) {
        self.check = check
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "pushspool.health", qos: .utility))
        problem.withLock { $0 = check() }
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            let now = self.check()
            self.problem.withLock { $0 = now }
        }
        timer.resume()
    }

    deinit { timer.cancel() }

    /// nil when healthy, else why not.
    public var currentProblem: String? { problem.withLock { $0 } }

    /// The usual check of `serve`: the spool's writers' folders and the registry (the probe
    /// `status` uses too).
    public static func spoolAndRegistry(spool: Spool, registry: RegistryProbe) -> @Sendable () -> String? {
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
            return registry.problem().map { "registry unreachable: \($0)" }
        }
    }
}
