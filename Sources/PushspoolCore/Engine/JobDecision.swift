/// What the job runner does with a job file it holds (locked, in `active/`), decided without I/O
/// in the manner of a state machine: the runner asks at each point where it learns something —
/// on arrival (where the job came from, the operator's request, whether it is due), once the
/// job's result log is read (what an earlier run left there), and after claiming the job's id in
/// a shared registry — and does what the answer says. `path` chains the three answers for every
/// combination of inputs at once: the table the tests hold it to.
public struct JobDecision: Sendable, Equatable {
    public enum Origin: Sendable, CaseIterable { case incoming, orphan }
    public enum Kind: Sendable, CaseIterable { case send, registration }
    /// The operator's request in `control/`. A resume is the pause request's removal: `none`.
    public enum Control: Sendable, CaseIterable { case none, cancel, pause }
    /// Whether a send job's `not_before` has come (a registration change is always due).
    public enum Timing: Sendable, CaseIterable { case due, notYetDue }

    /// What the job id's result log says about earlier runs.
    public enum PriorLog: Sendable, CaseIterable {
        /// No log, or none of its lines is the job line: the job's first run.
        case none
        /// This job file's run began (its job line) and never ended: it crashed or was stopped.
        case unfinishedThisFile
        /// Another job file with this id began and never ended.
        case unfinishedOtherFile
        /// A run of this very file ended (its summary) and then it was not moved on: a crash.
        case doneThisFile, cancelledThisFile
        /// Another job file with this id was sent (or cancelled) to its end.
        case doneOtherFile, cancelledOtherFile
        /// An earlier run ended failed (an invalid job, a registration the registry refused).
        case failed
    }

    /// The answer of a shared registry to "may this host send the job with this id?".
    public enum Claim: Sendable, CaseIterable { case granted, heldElsewhere, unavailable }

    /// The name the earlier log is kept under when it is set aside for a new run.
    public enum SetAside: String, Sendable, Equatable { case previous, failed }

    public enum Action: Sendable, Equatable {
        /// Paused: left untouched in `active/` until resumed, and said so.
        case holdPaused
        /// A paused orphan: left untouched, not news.
        case passOver
        /// Claimed between the scan's look and now by a version that is not due yet: back to `incoming/`.
        case returnToIncoming
        /// This file's run ended before the crash: it only moves to `done/`.
        case finishAlreadyDone
        /// Another file (or another host) sends this id: moved to `done/` as a duplicate, unsent.
        case duplicate
        /// The shared registry could not answer the claim: left in `active/` for the next run.
        case claimUnavailable
        /// Ended as cancelled without sending; `writeJobLine` on a first run.
        case cancel(writeJobLine: Bool)
        /// Sent (or the registration applied), from where an earlier run stopped if it did.
        case run(writeJobLine: Bool)
    }

    /// What to do once the prior log is read.
    public enum LogStep: Sendable, Equatable {
        /// Done with the job: the log is closed.
        case end(Action)
        /// Keep the earlier log under a name of its own, open a new one, and ask again with `.none`.
        case setAside(SetAside)
        /// Claim the id in the registry and ask `afterClaim`.
        case claim
        case go(Action)
    }

    public var origin: Origin
    public var kind: Kind
    public var control: Control
    public var timing: Timing

    public init(origin: Origin, kind: Kind, control: Control, timing: Timing) {
        self.origin = origin
        self.kind = kind
        self.control = control
        self.timing = timing
    }

    /// Before the result log is touched; nil: open and read it, then ask `afterLog`.
    public func onArrival() -> Action? {
        // A paused job stays where it is, untouched, until it is resumed (or cancelled).
        if control == .pause { return origin == .incoming ? .holdPaused : .passOver }
        // A cancel overrides `not_before`: the job is ended now.
        if origin == .incoming, control == .none, kind == .send, timing == .notYetDue { return .returnToIncoming }
        return nil
    }

    public func afterLog(_ prior: PriorLog) -> LogStep {
        switch prior {
        case .doneThisFile, .cancelledThisFile, .doneOtherFile, .cancelledOtherFile:
            // A registration change re-dropped under an id that ran runs again (upserts are
            // idempotent); a send is never sent twice.
            guard kind == .send else { return .setAside(prior == .doneThisFile || prior == .doneOtherFile ? .previous : .failed) }
            let own = prior == .doneThisFile || prior == .cancelledThisFile
            return .end(origin == .orphan && own ? .finishAlreadyDone : .duplicate)
        case .failed:
            return .setAside(.failed)
        case .none, .unfinishedThisFile, .unfinishedOtherFile:
            // A job line of this file means a dispatcher on this spool won the id's claim before
            // it wrote it: its resume goes on, even from another host sharing the spool.
            let resumingOwnClaim = origin == .orphan && prior == .unfinishedThisFile
            return kind == .send && !resumingOwnClaim ? .claim : .go(proceed(prior))
        }
    }

    public func afterClaim(_ claim: Claim, prior: PriorLog) -> Action {
        switch claim {
        case .granted: proceed(prior)
        case .heldElsewhere: .duplicate
        case .unavailable: .claimUnavailable
        }
    }

    private func proceed(_ prior: PriorLog) -> Action {
        control == .cancel ? .cancel(writeJobLine: prior == .none) : .run(writeJobLine: prior == .none)
    }

    /// The steps the runner takes for one combination of everything it can learn.
    public struct Path: Sendable, Equatable, CustomStringConvertible {
        public var setAside: SetAside?
        public var claims: Bool
        public var action: Action

        public init(setAside: SetAside? = nil, claims: Bool = false, _ action: Action) {
            self.setAside = setAside
            self.claims = claims
            self.action = action
        }

        public var description: String {
            [setAside.map { "set aside as \($0)" }, claims ? "claim" : nil, "\(action)"].compactMap { $0 }.joined(separator: " → ")
        }
    }

    /// The three answers chained, as the runner chains them.
    public func path(prior: PriorLog, claim: Claim) -> Path {
        if let early = onArrival() { return Path(early) }
        var path = Path(.passOver)
        var prior = prior
        while true {
            switch afterLog(prior) {
            case .end(let action), .go(let action):
                path.action = action
                return path
            case .setAside(let label):
                path.setAside = label
                prior = .none
            case .claim:
                path.claims = true
                path.action = afterClaim(claim, prior: prior)
                return path
            }
        }
    }
}
