import Dispatch
import Foundation
import PushspoolCore
import Synchronization

/// A capped job's frequency caps on its send path (`"capped": true`, `apps.<app>.frequency_cap`):
/// the scan's devices wait here in registry order, a batch at a time, and each batch is reserved
/// in the registry in one transaction (`FrequencyCapCounts.reserveCapped`) before any of its
/// devices is handed out. The devices over their cap end with the final status `capped`, unsent.
struct CapGate: Sendable {
    let registry: any FrequencyCapCounts
    let jobID: String
    /// Each app's cap (apps without one are not counted).
    let caps: [String: FrequencyCap]
    /// The caps' windows are wall times (`clock.wall`), as the registry keeps their counts.
    let clock: EngineClock

    /// Devices per reservation: one registry transaction each.
    static let batchSize = 1000

    /// nil: the job is not capped, or no app it can reach has a cap.
    init?(send: SendJob, jobID: String, apps: AppRoutes, registry: any FrequencyCapCounts, clock: EngineClock = .system) {
        let caps = apps.apps.compactMapValues(\.frequencyCap)
        guard send.capped, !caps.isEmpty else { return nil }
        self.init(registry: registry, jobID: jobID, caps: caps, clock: clock)
    }

    init(registry: any FrequencyCapCounts, jobID: String, caps: [String: FrequencyCap], clock: EngineClock = .system) {
        self.registry = registry
        self.jobID = jobID
        self.caps = caps
        self.clock = clock
    }

    /// The `capped` line's reason.
    static func reason(_ cap: FrequencyCap?) -> String {
        cap.map { "frequency_cap: \($0.max) per \($0.perHours) h reached" } ?? "frequency_cap reached"
    }

    /// Reserves the devices of capped apps among `devices` (those still to send) for this job;
    /// returns the keys over their cap.
    func reserve(_ devices: [(device: Device, key: Int64)], now: Date? = nil) throws(RegistryError) -> Set<Int64> {
        let candidates = devices.compactMap { d in caps[d.device.app].map { CapCandidate(key: d.key, cap: $0) } }
        return candidates.isEmpty ? [] : try registry.reserveCapped(job: jobID, devices: candidates, now: now ?? clock.wall())
    }

    /// A reservation made on a queue of its own, so that the job's thread sends the batch before
    /// while the registry counts this one.
    final class Ahead: Sendable {
        private let answer = Mutex<Result<Set<Int64>, RegistryError>?>(nil)
        private let done = DispatchSemaphore(value: 0)

        init(_ gate: CapGate, _ devices: [(device: Device, key: Int64)]) {
            DispatchQueue.global(qos: .userInitiated).async { [self] in
                let result = Result { () throws(RegistryError) -> Set<Int64> in try gate.reserve(devices) }
                answer.withLock { $0 = result }
                done.signal()
            }
        }

        /// The keys over their cap, once the reservation is made.
        func wait() -> Result<Set<Int64>, RegistryError> {
            done.wait()
            done.signal()   // a second wait returns at once
            return answer.withLock { $0! }
        }
    }

    /// Deletes counts older than the longest configured window (once per capped job).
    func prune(now: Date? = nil, log: Log) {
        guard let longest = caps.values.map(\.window).max() else { return }
        do {
            try registry.pruneCapCounts(before: (now ?? clock.wall()).addingTimeInterval(-longest))
        } catch {
            log.warning("could not prune old frequency cap counts: \(RegistryError.detail(error))", [(.job, jobID)])
        }
    }
}
