import Testing
@testable import PushspoolKit

/// Every row of `OutboxSchedule`'s table: each (state, event) pair and the state it leads to.
@Suite struct OutboxScheduleTests {
    typealias State = OutboxSchedule<String>.State

    enum Event: CustomStringConvertible {
        case ready, finished, retry(Double), take(Double)
        var description: String {
            switch self {
            case .ready: "ready"
            case .finished: "finished"
            case .retry(let d): "retry(\(d))"
            case .take(let t): "take(\(t))"
            }
        }
    }

    /// A schedule with key "k" in `state` (nil: unknown), taken there through the public events.
    static func schedule(_ state: State?) -> OutboxSchedule<String> {
        var s = OutboxSchedule<String>(maxInFlight: 4)
        switch state {
        case nil: break
        case .ready: s.ready("k")
        case .waiting(let due): s.ready("k"); _ = s.take(now: 0); s.retry("k", at: due)
        case .inFlight(let again): s.ready("k"); _ = s.take(now: 0); if again { s.ready("k") }
        }
        #expect(s.state(of: "k") == state)
        return s
    }

    static let rows: [(State?, Event, State?, sent: Bool)] = [
        (nil, .ready, .ready, false),
        (nil, .finished, nil, false),
        (nil, .retry(5), nil, false),
        (nil, .take(100), nil, false),
        (.ready, .ready, .ready, false),
        (.ready, .finished, .ready, false),
        (.ready, .retry(5), .ready, false),
        (.ready, .take(0), .inFlight(again: false), true),
        (.waiting(due: 10), .ready, .ready, false),
        (.waiting(due: 10), .finished, .waiting(due: 10), false),
        (.waiting(due: 10), .retry(20), .waiting(due: 10), false),
        (.waiting(due: 10), .take(9.9), .waiting(due: 10), false),
        (.waiting(due: 10), .take(10), .inFlight(again: false), true),
        (.inFlight(again: false), .ready, .inFlight(again: true), false),
        (.inFlight(again: false), .finished, nil, false),
        (.inFlight(again: false), .retry(5), .waiting(due: 5), false),
        (.inFlight(again: false), .take(100), .inFlight(again: false), false),
        (.inFlight(again: true), .ready, .inFlight(again: true), false),
        (.inFlight(again: true), .finished, .ready, false),
        (.inFlight(again: true), .retry(5), .ready, false),
        (.inFlight(again: true), .take(100), .inFlight(again: true), false),
    ]

    @Test(arguments: rows.indices)
    func everyStateAndEvent(_ row: Int) {
        let (from, event, to, sent) = Self.rows[row]
        var s = Self.schedule(from)
        var taken: [String] = []
        switch event {
        case .ready: s.ready("k")
        case .finished: s.finished("k")
        case .retry(let due): s.retry("k", at: due)
        case .take(let now): taken = s.take(now: now)
        }
        #expect(s.state(of: "k") == to, "\(String(describing: from)) + \(event)")
        #expect(taken == (sent ? ["k"] : []), "\(String(describing: from)) + \(event)")
        // In flight is counted exactly once per key in flight.
        let inFlight = if case .inFlight = to { 1 } else { 0 }
        #expect(s.inFlight == inFlight, "\(String(describing: from)) + \(event)")
    }

    @Test func everyStateHasARowForEveryEvent() {
        let states: [State?] = [nil, .ready, .waiting(due: 10), .inFlight(again: false), .inFlight(again: true)]
        for state in states {
            let events = Set(Self.rows.filter { $0.0 == state }.map { "\($0.1)".prefix(while: { $0 != "(" }) })
            #expect(events == ["ready", "finished", "retry", "take"], "\(String(describing: state))")
        }
    }

    @Test func atMostMaxInFlightOldestFirst() {
        var s = OutboxSchedule<String>(maxInFlight: 2)
        for k in ["a", "b", "c", "d"] { s.ready(k) }
        #expect(s.take(now: 0) == ["a", "b"])
        #expect(s.take(now: 0) == [])
        s.finished("a")
        #expect(s.take(now: 0) == ["c"])
        s.retry("b", at: 50)
        #expect(s.take(now: 0) == ["d"])
        #expect(s.nextDue() == 50)
        s.finished("c"); s.finished("d")
        #expect(s.take(now: 49) == [] && s.isIdle)
        #expect(s.take(now: 50) == ["b"])
        s.finished("b")
        #expect(s.isIdle && s.nextDue() == nil)
    }

    @Test func theEarliestRetryIsDueFirstAndAReadiedOneIsNoLongerDue() {
        var s = OutboxSchedule<String>(maxInFlight: 8)
        for k in ["a", "b", "c"] { s.ready(k) }
        _ = s.take(now: 0)
        s.retry("a", at: 30)
        s.retry("b", at: 10)
        s.retry("c", at: 20)
        #expect(s.nextDue() == 10)
        // New work for b: it goes now, and its old retry time no longer counts.
        s.ready("b")
        #expect(s.nextDue() == 20)
        #expect(s.take(now: 25) == ["b", "c"])
        #expect(s.nextDue() == 30)
    }
}
