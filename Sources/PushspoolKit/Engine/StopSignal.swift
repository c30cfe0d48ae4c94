import PushspoolCore

/// Why the job in hand must stop producing targets now, asked before every target: the
/// dispatcher is stopping, or an operator cancelled or paused it (`control/`). Targets in flight finish either way. One per
/// job run, shared by every target's closures; each question is an atomic load while no stop is
/// asked for.
final class StopSignal: Sendable {
    private let isStopping: @Sendable () -> Bool
    private let controls: JobControls?
    private let jobID: String

    init(isStopping: @escaping @Sendable () -> Bool, controls: JobControls?, jobID: String) {
        self.isStopping = isStopping
        self.controls = controls
        self.jobID = jobID
    }

    var reason: StopReason? {
        if isStopping() { return .stopping }
        switch controls?.request(for: jobID) {
        case .cancel?: return .cancelled
        case .pause?: return .paused
        case nil: return nil
        }
    }

    var isHalted: Bool { reason != nil }
}
