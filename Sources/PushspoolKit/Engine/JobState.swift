/// Where a job stands, as `status`, `status --json`, `GET /v1/jobs/{id}` and `run`'s live lines
/// show it. The raw values are the words those outputs print.
public enum JobState: String, Sendable, Equatable, CaseIterable {
    /// In `incoming/`, due now.
    case waiting
    /// In `incoming/`, its `not_before` still ahead.
    case scheduled
    /// A dispatcher is sending it.
    case running
    /// Paused by an operator; the dispatcher running it has not stopped yet.
    case pausing
    /// Paused by an operator: waits until `resume`.
    case paused
    /// Cancelled by an operator; not ended yet.
    case cancelling
    /// In `active/` with no dispatcher holding it: the next run resumes it.
    case waitingToResume = "waiting to resume"
    /// A `local_time` job in `active/` between waves: its next wave is ahead.
    case waitingForWave = "waiting for wave"
    /// Held by a dispatcher whose heartbeat stopped (SIGSTOP, a stall).
    case notResponding = "not responding"
    /// Ended: its result log's summary says how.
    case done, cancelled, failed

    /// An ended job's state.
    public init(_ ended: SummaryStatus) {
        switch ended {
        case .done: self = .done
        case .cancelled: self = .cancelled
        case .failed: self = .failed
        }
    }

    /// The state an operator's request gives a job that is not ended.
    /// `running`: whether a dispatcher holds it now.
    init(request: ControlRequest?, running: Bool) {
        switch (request, running) {
        case (.cancel?, _): self = .cancelling
        case (.pause?, true): self = .pausing
        case (.pause?, false): self = .paused
        case (nil, true): self = .running
        case (nil, false): self = .waitingToResume
        }
    }
}
