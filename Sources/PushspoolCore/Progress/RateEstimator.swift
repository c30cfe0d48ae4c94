/// Targets per second over a recent window, and the time left at that rate: what `run`'s live
/// lines, the progress checkpoints and `status` show. Pure: the caller brings the clock.
public struct RateEstimator: Sendable, Equatable {
    /// How far back samples are kept, in seconds (at least two are kept whatever their age:
    /// a window of 0 gives the rate since the previous sample).
    public let window: Double
    /// The shortest span a rate is given over: a rate over a few milliseconds says nothing.
    public let minimumSpan: Double
    private var samples: [Sample] = []

    private struct Sample: Sendable, Equatable {
        var time: Double
        var count: Int
    }

    public init(window: Double, minimumSpan: Double) {
        self.window = window
        self.minimumSpan = minimumSpan
    }

    /// Records that `count` targets were final at `time` (seconds, any fixed origin).
    public mutating func sample(at time: Double, count: Int) {
        samples.append(Sample(time: time, count: count))
        while samples.count > 2, time - samples[0].time > window { samples.removeFirst() }
    }

    /// Targets per second from the oldest sample kept to the newest; nil until they are
    /// `minimumSpan` apart.
    public var rate: Double? {
        guard let first = samples.first, let last = samples.last, last.time - first.time >= minimumSpan else { return nil }
        return Double(last.count - first.count) / (last.time - first.time)
    }

    /// Seconds until `targets` are final at `rate`; nil without a total, a positive rate, or
    /// anything left.
    public static func secondsLeft(targets: Int?, finished: Int, rate: Double?) -> Double? {
        guard let targets, let rate, rate > 0, targets > finished else { return nil }
        return Double(targets - finished) / rate
    }
}
