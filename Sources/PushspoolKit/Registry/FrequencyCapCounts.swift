import Foundation
import PushspoolCore

/// The counts behind `apps.<app>.frequency_cap`, kept in the registry (`cap_counts`: one row per
/// device and capped job, with the time it was counted), so they survive restarts and are shared
/// by every host of a PostgreSQL registry.
///
/// A device is counted when a capped job **reserves** it, in the batch before its send is handed
/// to the worker pool, not when the service answers: a crash between the two cannot let a
/// device through twice, and a send that then fails still counts (a cap errs towards fewer
/// pushes). The row's key is (device, job): a resumed job reserving the same device again
/// changes nothing, and a device already reserved by this job is never over its cap because of it.
public protocol FrequencyCapCounts: AnyObject, Sendable {
    /// Reserves each of `devices` for `job` at `now` (one transaction), except those that already
    /// had `cap.max` other capped jobs within `cap.perHours` and none of them is `job`: their
    /// keys are returned, uncounted. `devices` hold registry keys (`forEach`'s), of one scan.
    func reserveCapped(job: String, devices: [CapCandidate], now: Date) throws(RegistryError) -> Set<Int64>
    /// Deletes the counts made before `before` (past every configured window). Returns how many.
    @discardableResult
    func pruneCapCounts(before: Date) throws(RegistryError) -> Int
}

/// A device a capped job is about to send to: its registry key and its app's cap.
public struct CapCandidate: Sendable {
    public var key: Int64
    public var cap: FrequencyCap

    public init(key: Int64, cap: FrequencyCap) {
        self.key = key
        self.cap = cap
    }

    /// One counted push of a device, as a backend reads it back.
    public struct Count: Sendable {
        public var key: Int64
        /// Whether it was counted for the job asking now.
        public var thisJob: Bool
        /// Unix seconds.
        public var at: Double

        public init(key: Int64, thisJob: Bool, at: Double) {
            (self.key, self.thisJob, self.at) = (key, thisJob, at)
        }
    }

    /// The keys of `candidates` over their cap, given every count of their key range (both
    /// backends read the range, then decide here).
    public static func over(_ candidates: [CapCandidate], counts: [Count], now: Date) -> Set<Int64> {
        guard !counts.isEmpty else { return [] }
        var byKey: [Int64: [Count]] = [:]
        for c in counts { byKey[c.key, default: []].append(c) }
        var over: Set<Int64> = []
        let t = now.timeIntervalSince1970
        for candidate in candidates {
            guard let mine = byKey[candidate.key], !mine.contains(where: \.thisJob) else { continue }
            if mine.count(where: { $0.at > t - candidate.cap.window }) >= candidate.cap.max { over.insert(candidate.key) }
        }
        return over
    }
}
