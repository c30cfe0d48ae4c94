import Testing
@testable import PushspoolHTTP

/// How many connections an origin's waiting requests ask for: enough for what waits at the open
/// ones' stream limit, counting connects under way, never past the cap.
@Suite struct H2PoolTests {
    func pool(waiting: Int, connecting: Int) -> H2Pool {
        let p = H2Pool()
        for i in 0..<waiting {
            p.push(H2Stream(request: HTTPRequest(url: "https://h/\(i)"), origin: Origin(host: "h", port: 443, authority: "h"),
                            pathStart: 9, completion: { _ in }))
        }
        p.connecting = connecting
        return p
    }

    @Test func enoughForWhatWaits() {
        #expect(pool(waiting: 150, connecting: 0).connectionsToOpen(open: 1, perConnection: 50, max: 8) == 3)
        #expect(pool(waiting: 151, connecting: 0).connectionsToOpen(open: 1, perConnection: 50, max: 8) == 4)
        #expect(pool(waiting: 3000, connecting: 0).connectionsToOpen(open: 1, perConnection: 1000, max: 8) == 3)
    }

    @Test func connectsUnderWayCount() {
        #expect(pool(waiting: 150, connecting: 2).connectionsToOpen(open: 1, perConnection: 50, max: 8) == 1)
        #expect(pool(waiting: 100, connecting: 2).connectionsToOpen(open: 1, perConnection: 50, max: 8) == 0)
    }

    @Test func neverPastTheCap() {
        #expect(pool(waiting: 10_000, connecting: 1).connectionsToOpen(open: 2, perConnection: 100, max: 4) == 1)
        #expect(pool(waiting: 10_000, connecting: 0).connectionsToOpen(open: 4, perConnection: 100, max: 4) == 0)
        #expect(pool(waiting: 10, connecting: 0).connectionsToOpen(open: 1, perConnection: 0, max: 4) == 3)
    }
}
