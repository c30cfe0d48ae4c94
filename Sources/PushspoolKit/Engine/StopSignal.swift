import PushspoolCore

/// Why the job in hand must stop producing targets now, asked before every target: the
/// dispatcher is stopping, a dispatcher on another host took the job over (its owner record), or
/// an operator cancelled or paused it (`control/`). Targets in flight finish either way. One per
/// job run, shared by every target's closures; each question is an atomic load while no stop is
/// asked for.
final class StopSignal: Sendable {
    private let isStopping: @Sendable () -> Bool
    private let controls: JobControls?
    private let jobID: String
    private let ownership: JobOwners.Ownership?
    private let owners: JobOwners?

    init(isStopping: @escaping @Sendable () -> Bool, controls: JobControls?, jobID: String,
         ownership: JobOwners.Ownership? = nil, owners: JobOwners? = nil) {
        self.isStopping = isStopping
        self.controls = controls
        self.jobID = jobID
        self.ownership = ownership
        self.owners = owners
    }

    var reason: StopReason? {
        if let ownership, ownership.isLost { return .ownershipLost(to: ownership.lostTo ?? "another host") }
        if isStopping() { return .stopping }
        switch controls?.request(for: jobID) {
        case .cancel?: return .cancelled
        case .pause?: return .paused
        case nil: return nil
        }
    }

    var isHalted: Bool { reason != nil }

    /// Re-reads the job's owner record (`JobOwners.confirm`): asked before each batch of targets,
    /// so that where file locks do nothing, a takeover stops this run within a batch.
    func confirmOwnership() {
        if let owners, let ownership { owners.confirm(ownership) }
    }
}
