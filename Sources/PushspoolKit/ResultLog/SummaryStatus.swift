/// How a job ended, as its result log's summary line says (`status`).
public enum SummaryStatus: String, Sendable, Equatable, CaseIterable {
    /// Every target reached a final outcome (or the registration change was applied).
    case done
    /// An operator cancelled it; what was not sent never will be.
    case cancelled
    /// It could not be processed (invalid, or its registry change failed for good).
    case failed

    /// Whether a job with this id must not be sent again (`submit` refuses, a re-drop is a
    /// duplicate): it ran to its end. A failed job may be corrected and dropped again.
    public var isComplete: Bool { self != .failed }
}
