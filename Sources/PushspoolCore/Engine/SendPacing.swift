/// `spread_over_seconds`: the i-th target of n sent in a run is due at start + i × window / n, so
/// a job sends evenly over its window without holding its targets in memory (a resumed job goes
/// on at the same pace, without waiting for what it sent before).
public struct SendPacing: Sendable, Equatable {
    /// When the run began, in seconds on the clock `due` is asked with (the engine's monotonic one).
    public let start: Double
    /// Seconds between two targets; nil: not paced.
    public let step: Double?

    /// Paced only with a window and more than one target.
    public init(spread: Int?, targets: Int?, start: Double) {
        self.start = start
        guard let spread, let targets, targets > 1 else { step = nil; return }
        step = Double(spread) / Double(targets)
    }

    /// When the target with this index (0 for the run's first) is due, if that is still ahead
    /// of `now`; nil: it may go now.
    public func due(_ index: Int, now: Double) -> Double? {
        guard let step, index > 0 else { return nil }
        let at = start + Double(index) * step
        return at > now ? at : nil
    }
}
