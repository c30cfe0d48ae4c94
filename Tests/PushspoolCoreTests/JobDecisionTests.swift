import PushspoolCore
import Testing

/// The job runner's decision table: every combination of origin × kind × control × timing ×
/// prior log × claim against a table of rules read top to bottom (first match wins; nil is any
/// value). The rules are the README's failure semantics written as a table, not the code again.
@Suite struct JobDecisionTests {
    typealias D = JobDecision

    struct Case: Sendable, CustomTestStringConvertible {
        var origin: D.Origin, kind: D.Kind, control: D.Control, timing: D.Timing, prior: D.PriorLog, claim: D.Claim
        var testDescription: String { "\(origin) \(kind) control:\(control) \(timing) prior:\(prior) claim:\(claim)" }
    }

    static let cases: [Case] = D.Origin.allCases.flatMap { o in D.Kind.allCases.flatMap { k in D.Control.allCases.flatMap { c in
        D.Timing.allCases.flatMap { t in D.PriorLog.allCases.flatMap { p in D.Claim.allCases.map { Case(origin: o, kind: k, control: c, timing: t, prior: p, claim: $0) } } }
    } } }

    struct Rule: Sendable {
        var origin: D.Origin? = nil, kind: D.Kind? = nil, control: Set<D.Control>? = nil, timing: D.Timing? = nil
        var prior: Set<D.PriorLog>? = nil, claim: D.Claim? = nil
        var then: D.Path

        func matches(_ c: Case) -> Bool {
            (origin ?? c.origin) == c.origin && (kind ?? c.kind) == c.kind && (control?.contains(c.control) ?? true)
                && (timing ?? c.timing) == c.timing && (prior?.contains(c.prior) ?? true) && (claim ?? c.claim) == c.claim
        }
    }

    static let ended: Set<D.PriorLog> = [.doneThisFile, .doneOtherFile, .cancelledThisFile, .cancelledOtherFile]
    static let go: Set<D.Control> = [.none], cancel: Set<D.Control> = [.cancel]

    static let rules: [Rule] = [
        // A paused job is left untouched, whatever else is true; only a claimed one is news.
        Rule(origin: .incoming, control: [.pause], then: D.Path(.holdPaused)),
        Rule(origin: .orphan, control: [.pause], then: D.Path(.passOver)),
        // A send job replaced by one not due yet waits in incoming/ (a cancel ends it now).
        Rule(origin: .incoming, kind: .send, control: go, timing: .notYetDue, then: D.Path(.returnToIncoming)),
        // A send job is never sent twice: a crash after the summary only finishes the move…
        Rule(origin: .orphan, kind: .send, prior: [.doneThisFile, .cancelledThisFile], then: D.Path(.finishAlreadyDone)),
        // …and any other file with a completed id is a duplicate.
        Rule(kind: .send, prior: ended, then: D.Path(.duplicate)),
        // A registration change runs again (upserts are idempotent): its old log is kept aside.
        Rule(kind: .registration, control: go, prior: [.doneThisFile, .doneOtherFile], then: D.Path(setAside: .previous, .run(writeJobLine: true))),
        Rule(kind: .registration, control: cancel, prior: [.doneThisFile, .doneOtherFile], then: D.Path(setAside: .previous, .cancel(writeJobLine: true))),
        Rule(kind: .registration, control: go, prior: [.cancelledThisFile, .cancelledOtherFile, .failed], then: D.Path(setAside: .failed, .run(writeJobLine: true))),
        Rule(kind: .registration, control: cancel, prior: [.cancelledThisFile, .cancelledOtherFile, .failed], then: D.Path(setAside: .failed, .cancel(writeJobLine: true))),
        Rule(kind: .registration, control: go, prior: [.none], then: D.Path(.run(writeJobLine: true))),
        Rule(kind: .registration, control: cancel, prior: [.none], then: D.Path(.cancel(writeJobLine: true))),
        Rule(kind: .registration, control: go, prior: [.unfinishedThisFile, .unfinishedOtherFile], then: D.Path(.run(writeJobLine: false))),
        Rule(kind: .registration, control: cancel, prior: [.unfinishedThisFile, .unfinishedOtherFile], then: D.Path(.cancel(writeJobLine: false))),
        // A send job this file began is resumed without asking the registry again.
        Rule(origin: .orphan, kind: .send, control: go, prior: [.unfinishedThisFile], then: D.Path(.run(writeJobLine: false))),
        Rule(origin: .orphan, kind: .send, control: cancel, prior: [.unfinishedThisFile], then: D.Path(.cancel(writeJobLine: false))),
        // Every other send claims its id first: another host may be sending it.
        Rule(kind: .send, prior: [.failed], claim: .heldElsewhere, then: D.Path(setAside: .failed, claims: true, .duplicate)),
        Rule(kind: .send, prior: [.failed], claim: .unavailable, then: D.Path(setAside: .failed, claims: true, .claimUnavailable)),
        Rule(kind: .send, claim: .heldElsewhere, then: D.Path(setAside: nil, claims: true, .duplicate)),
        Rule(kind: .send, claim: .unavailable, then: D.Path(setAside: nil, claims: true, .claimUnavailable)),
        Rule(kind: .send, control: go, prior: [.none], then: D.Path(claims: true, .run(writeJobLine: true))),
        Rule(kind: .send, control: cancel, prior: [.none], then: D.Path(claims: true, .cancel(writeJobLine: true))),
        Rule(kind: .send, control: go, prior: [.failed], then: D.Path(setAside: .failed, claims: true, .run(writeJobLine: true))),
        Rule(kind: .send, control: cancel, prior: [.failed], then: D.Path(setAside: .failed, claims: true, .cancel(writeJobLine: true))),
        Rule(kind: .send, control: go, prior: [.unfinishedThisFile, .unfinishedOtherFile], then: D.Path(claims: true, .run(writeJobLine: false))),
        Rule(kind: .send, control: cancel, prior: [.unfinishedThisFile, .unfinishedOtherFile], then: D.Path(claims: true, .cancel(writeJobLine: false))),
    ]

    @Test(arguments: cases) func everyCombination(_ c: Case) throws {
        let rule = try #require(Self.rules.first { $0.matches(c) }, "no rule covers this combination")
        let decision = D(origin: c.origin, kind: c.kind, control: c.control, timing: c.timing)
        #expect(decision.path(prior: c.prior, claim: c.claim) == rule.then)
    }

    /// Every rule decides at least one combination: none is shadowed by the ones above it.
    @Test func noRuleIsDead() {
        for index in Self.rules.indices {
            #expect(Self.cases.contains { c in Self.rules.firstIndex { $0.matches(c) } == index }, "rule \(index) is never reached")
        }
    }

    @Test func tableSize() {
        #expect(Self.cases.count == 2 * 2 * 3 * 2 * 8 * 3)
    }
}
