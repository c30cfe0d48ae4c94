import Dispatch
import PushspoolCore

/// The last stage of the send path: a target handed out (`handOut`) ends here once. A final
/// outcome is written to the result log (`OutcomeRecorder`, a group of targets per write), and
/// only then counted (the run's tally, its resume point, the delivery metrics) and its worker-pool
/// slot given back; a target a stop left unsent is counted as abandoned, unwritten. `wait`
/// returns once every target handed out has ended.
final class OutcomeStage: Sendable {
    let tally: SendRun.Tally
    let recorder: OutcomeRecorder
    /// Where a resumable run keeps its resume point; nil: none (a wave, a chunk, a hub send).
    let tracker: ResumeTracker?
    private let metrics: Metrics?
    private let inFlight = DispatchGroup()

    init(tally: SendRun.Tally, recorder: OutcomeRecorder, tracker: ResumeTracker?, metrics: Metrics?) {
        self.tally = tally
        self.recorder = recorder
        self.tracker = tracker
        self.metrics = metrics
    }

    /// A target handed out, with its registry key when it has one (a hub request has none). A
    /// class: the send path holds it in several places, each a reference rather than a copy of
    /// its recipient.
    final class Target: Sendable {
        let platform: Platform
        let provider: String
        let app: String
        let recipient: Recipient
        /// Its number in the resume tracker.
        fileprivate let ticket: Int?

        fileprivate init(platform: Platform, provider: String, app: String, recipient: Recipient, ticket: Int?) {
            self.platform = platform
            self.provider = provider
            self.app = app
            self.recipient = recipient
            self.ticket = ticket
        }
    }

    /// Tells the stage a target is on its way: it ends with `entry` or `abandoned`.
    func handOut(platform: Platform, provider: String, app: String, recipient: Recipient, key: Int64?) -> Target {
        inFlight.enter()
        let ticket = key.flatMap { key in tracker.map { $0.handedOut(key: key, at: recorder.position) } }
        return Target(platform: platform, provider: provider, app: app, recipient: recipient, ticket: ticket)
    }

    /// The line to write for `target`'s final outcome: once written, the outcome is counted and
    /// `release` (its slot) runs.
    func entry(_ target: Target, _ outcome: TargetOutcome, release: @escaping @Sendable () -> Void = {}) -> OutcomeRecorder.Entry {
        let tally = tally, tracker = tracker, metrics = metrics, inFlight = inFlight
        // Only what the count needs is captured: the whole outcome (its provider's answer) was
        // copied into every target's closure and destroyed with it.
        let status = outcome.status, attempts = outcome.attempts
        return OutcomeRecorder.Entry(platform: target.platform, provider: target.provider, app: target.app, recipient: target.recipient,
                                     outcome: outcome, at: recorder.clock.wall()) {
            tally.add(status, attempts: attempts)
            if let ticket = target.ticket { tracker?.finished(ticket) }
            metrics?.delivery(platform: target.platform.rawValue, provider: target.provider, status: status.rawValue, app: target.app)
            release()
            inFlight.leave()
        }
    }

    /// `target` left unsent by a stop: not final, not written, not counted; the resumed job sends it.
    func abandoned(_ target: Target) {
        tally.counts.withLock { $0.abandoned += 1 }
        inFlight.leave()
    }

    /// Waits until every target handed out has ended.
    func wait() { inFlight.wait() }
}
