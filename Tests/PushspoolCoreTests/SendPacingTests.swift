import PushspoolCore
import Testing

/// The pacing of `spread_over_seconds`, as a table: window, targets, index and clock against
/// the moment the target is due (nil: now).
@Suite struct SendPacingTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var spread: Int?
        var targets: Int?
        var index: Int
        var now: Double
        var due: Double?
        var testDescription: String { "spread \(spread.map(String.init) ?? "-") targets \(targets.map(String.init) ?? "-") #\(index) at +\(now - 1000)" }
    }

    static let cases: [Case] = [
        // Not paced: no window, no count, or a single target.
        Case(spread: nil, targets: 100, index: 5, now: 1000, due: nil),
        Case(spread: 60, targets: nil, index: 5, now: 1000, due: nil),
        Case(spread: 60, targets: 1, index: 1, now: 1000, due: nil),
        Case(spread: 60, targets: 0, index: 1, now: 1000, due: nil),
        // The first target goes at once.
        Case(spread: 50, targets: 100, index: 0, now: 1000, due: nil),
        // The i-th at start + i × window / n.
        Case(spread: 50, targets: 100, index: 1, now: 1000, due: 1000.5),
        Case(spread: 50, targets: 100, index: 50, now: 1000, due: 1025),
        Case(spread: 50, targets: 100, index: 99, now: 1010, due: 1049.5),
        // Due exactly now, or already past (a slow registry, a resumed run): now.
        Case(spread: 50, targets: 100, index: 50, now: 1025, due: nil),
        Case(spread: 50, targets: 100, index: 10, now: 1049, due: nil),
        // More targets than planned (devices added meanwhile) keep the step.
        Case(spread: 10, targets: 10, index: 20, now: 1000, due: 1020),
    ]

    @Test(arguments: cases) func dueMoment(_ c: Case) {
        let pacing = SendPacing(spread: c.spread, targets: c.targets, start: 1000)
        #expect(pacing.due(c.index, now: c.now) == c.due)
    }
}
