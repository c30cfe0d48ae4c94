import Foundation
import Testing
@testable import PushspoolKit

/// Connections that follow demand, through the real binary against the fake APNs: as many as
/// `concurrency` needs at the server's SETTINGS_MAX_CONCURRENT_STREAMS, one JWT for all of them,
/// and a GOAWAY on one of them costing nothing and repeating nothing.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct APNsConnectionTests {
    struct Case: Sendable, CustomTestStringConvertible {
        /// The fake's SETTINGS_MAX_CONCURRENT_STREAMS.
        var streams: Int
        var concurrency: Int
        var devices: Int
        /// ceil(concurrency / streams).
        var connections: Int
        var testDescription: String { "\(concurrency) in flight at \(streams) streams per connection" }
    }

    /// A small server limit (50, far under ours), and the server's limit equal to ours (1,000, as
    /// APNs): then only demand, not the limit, says a connection is full.
    static let cases = [Case(streams: 50, concurrency: 200, devices: 3000, connections: 4),
                        Case(streams: 1000, concurrency: 2500, devices: 10_000, connections: 3)]

    /// Runs one campaign to `c.devices` devices with answers held `holdMs`, so that every stream
    /// a connection may carry is taken; checks every device once in the result log and at the fake.
    func campaign(_ c: Case, holdMs: Int, fakeArgs: [String: String] = [:]) throws -> [String: Any] {
        let s = try APNsSpool(fakeArgs: ["track-limit": "0", "hold-ms": String(holdMs), "max-streams": String(c.streams)]
                                  .merging(fakeArgs) { _, new in new },
                              concurrency: c.concurrency)
        try s.importDevices(c.devices, tag: "all")
        s.drop("wide", #"{"id":"wide","to_tag":"all","pns":["apns"],"message":"hi"}"#)
        let run = try s.runOnce()
        #expect(run.status == 0, "\(run.stderr.suffix(500))")
        let lines = s.deliveries("wide")
        #expect(lines.count == c.devices)
        #expect(lines.values.allSatisfy { $0["status"] as? String == "delivered" })
        #expect(s.results("wide").filter { $0["type"] as? String == "delivery" }.count == c.devices, "one line per device")
        let state = waitForIdle(s.fake, answered: c.devices)
        #expect(state["tokensDelivered"] as? Int == c.devices)
        #expect(state["duplicateDeliveries"] as? Int == 0)
        #expect(state["requests"] as? Int == c.devices, "no request processed twice")
        #expect(state["jwts"] as? Int == 1, "one JWT shared by every connection")
        #expect((state["maxStreamsOpen"] as? Int ?? .max) <= c.streams)
        return state
    }

    @Test(arguments: cases)
    func connectionsFollowDemand(_ c: Case) throws {
        let state = try campaign(c, holdMs: 200)
        #expect(state["tlsConnections"] as? Int == c.connections)
        #expect(state["maxOpenSessions"] as? Int == c.connections)
        // Least-loaded first: every connection carries a fair share, not just the overflow.
        let perSession = state["streamsPerSession"] as? [Int] ?? []
        #expect(perSession.count == c.connections)
        #expect(perSession.allSatisfy { $0 >= c.devices / c.connections / 3 }, "\(perSession)")
    }

    /// APNs allows a new connection one stream until its first answer, then 50 here: one stream
    /// is no measure of demand, so connections open after that answer, as many as 50 a piece need.
    @Test func aOneStreamStartIsNotTakenForTheLimit() throws {
        let c = Case(streams: 50, concurrency: 200, devices: 2000, connections: 4)
        let state = try campaign(c, holdMs: 100, fakeArgs: ["first-streams": "1"])
        #expect(state["tlsConnections"] as? Int == c.connections)
    }

    /// One GOAWAY, on the first connection to reach a stream mid-campaign: its streams past the
    /// GOAWAY's last-stream-id go again on the others (or a replacement), answered ones never.
    @Test(arguments: cases)
    func goawayOnOneConnectionLosesAndRepeatsNothing(_ c: Case) throws {
        let midway = c.devices / c.connections / 2
        let state = try campaign(c, holdMs: 100, fakeArgs: ["goaway-once": String(midway)])
        #expect(state["goawaysSent"] as? Int == 1)
        // The others carried on: at most one replacement, not a fresh set (none when the streams
        // left fit on the others by then, as a loaded machine's timing can make it).
        let opened = state["tlsConnections"] as? Int ?? 0
        #expect(opened == c.connections + 1 || opened == c.connections, "\(opened) connections for \(c.connections)")
        #expect((state["maxOpenSessions"] as? Int ?? 0) >= c.connections)
    }

    /// A dispatcher left idle holding its APNs connection sleeps until the connection's next
    /// liveness check (the PING interval, 30 s): its HTTP/2 thread woke four times a second
    /// whatever it held (12 `poll` calls in these 3 s).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/strace")))
    func anIdleConnectionLetsThePollThreadSleep() throws {
        let s = try APNsSpool()
        try s.register(id: "d1", handle: APNsSpool.token("aaaa", 1))
        let polls = try pollCallsWhenIdle(["run"] + s.common) {
            s.drop("j1", #"{"id":"j1","to_tag":"username:alice","pns":["apns"],"message":"m"}"#)
            eventually("j1 done", timeout: 30) { FileManager.default.fileExists(atPath: s.dir.path("spool/done/j1.json")) }
            #expect(s.deliveries("j1").values.first?["status"] as? String == "delivered")
        }
        #expect(polls.count <= 2, "\(polls.count) poll calls in 3 s idle:\n\(polls.prefix(8).joined(separator: "\n"))")
    }
}
