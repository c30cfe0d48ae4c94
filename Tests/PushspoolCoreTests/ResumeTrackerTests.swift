import Testing
@testable import PushspoolCore

@Suite struct ResumeTrackerTests {
    static func at(_ offset: Int64, delivered: Int = 0) -> LogPosition { LogPosition(offset: offset, delivered: delivered) }

    /// The lowest target in flight bounds the point: its key minus one, the log as it was when it
    /// was handed out; once it is final the point moves up to the next one in flight, and with
    /// none in flight to the last device scanned and the log's end.
    @Test func theLowestTargetInFlightBoundsThePoint() {
        let t = ResumeTracker(start: ResumePoint(after: 0, log: Self.at(100)), runStart: 100)
        #expect(t.point(current: Self.at(100)) == ResumePoint(after: 0, log: Self.at(100)))
        let a = t.handedOut(key: 3, at: Self.at(100))
        t.passed(key: 4)                                   // finished in an earlier run, or nothing to send
        let b = t.handedOut(key: 7, at: Self.at(100))
        let c = t.handedOut(key: 9, at: Self.at(150, delivered: 1))
        t.finished(b)                                      // out of order: a is still in flight
        #expect(t.point(current: Self.at(200, delivered: 2)) == ResumePoint(after: 2, matched: 0, log: Self.at(100)))
        t.finished(a)
        #expect(t.point(current: Self.at(250, delivered: 3)) == ResumePoint(after: 8, matched: 3, log: Self.at(150, delivered: 1)))
        t.finished(c)
        t.passed(key: 12)
        #expect(t.point(current: Self.at(300, delivered: 3)) == ResumePoint(after: 12, matched: 5, log: Self.at(300, delivered: 3)))
    }

    /// A target that never becomes final (abandoned at a stop) holds the point where it is.
    @Test func anUnfinishedTargetHoldsThePoint() {
        let t = ResumeTracker(start: ResumePoint(after: 0, log: Self.at(10)), runStart: 10)
        _ = t.handedOut(key: 5, at: Self.at(10))
        for k in 6...50 { t.finished(t.handedOut(key: Int64(k), at: Self.at(10 + Int64(k)))) }
        #expect(t.point(current: Self.at(999)).after == 4)
        #expect(t.point(current: Self.at(999)).log == Self.at(10))
    }

    /// A resumed run keeps the lines it only read (after the point it started from, before its
    /// own) as a tail, with the tails of that point; more than `maxTails` merge into one range.
    @Test func aResumedRunKeepsWhatItOnlyReadAsATail() {
        let start = ResumePoint(after: 40, matched: 40, log: Self.at(500, delivered: 40), tails: [100..<200])
        let t = ResumeTracker(start: start, runStart: 800)
        #expect(t.point(current: Self.at(800, delivered: 45)) == ResumePoint(after: 40, matched: 40, log: Self.at(800, delivered: 45), tails: [100..<200, 500..<800]))
        let many = ResumePoint(after: 0, log: Self.at(1000), tails: (0..<ResumePoint.maxTails).map { Int64($0 * 100)..<Int64($0 * 100 + 50) })
        #expect(ResumeTracker(start: many, runStart: 1200).point(current: Self.at(1200)).tails == [0..<1200])
        // A first run (nothing read before it) has no tail.
        #expect(ResumeTracker(start: ResumePoint(after: 0, log: Self.at(90)), runStart: 90).point(current: Self.at(90)).tails.isEmpty)
    }
}
