/// `apps.<app>.frequency_cap`: at most `max` pushes of jobs marked `"capped": true` reach one
/// device of the app in any `perHours` hours. A device over it ends the job with the final status
/// `capped`, unsent. The counts live in the registry (`FrequencyCapCounts`).
public struct FrequencyCap: Sendable, Equatable {
    public var max: Int
    public var perHours: Int

    public init(max: Int, perHours: Int) {
        self.max = max
        self.perHours = perHours
    }

    /// The window in seconds.
    public var window: Double { Double(perHours) * 3600 }

    /// The longest window there is: a year (counts older than the longest configured window are pruned).
    public static let perHoursRange = 1...8784
    public static let maxRange = 1...1_000_000
}
