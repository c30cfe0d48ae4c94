import Foundation
@testable import PushspoolHTTP
import Synchronization
import Testing
@testable import PushspoolKit

/// The connections and requests in flight a client counts (what `status` and
/// `pushspool_provider_connections` show per provider), against the fake APNs holding its answers.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct ConnectionGaugeTests {
    @Test func anHTTP2ClientCountsItsSessionAndTheRequestsOnIt() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", args: ["hold-ms": "1500"], dir: dir)
        let client = try H2Client(options: H2ClientTests.options())
        #expect(client.connections == HTTPConnectionCount(open: 0, inFlight: 0), "nothing before the first request")
        let answered = DispatchGroup()
        for i in 0..<20 {
            answered.enter()
            client.execute(H2ClientTests.request(fake, token: H2ClientTests.token(i))) { _ in answered.leave() }
        }
        let held = eventually("the session up with the 20 requests on it", timeout: 20, poll: 0.02, { client.connections },
                              until: { $0.open == 1 })
        #expect(held.inFlight == 20, "\(held)")
        answered.wait()
        let after = eventually("the answers counted", timeout: 5, poll: 0.02, { client.connections }, until: { $0.inFlight == 0 })
        #expect(after == HTTPConnectionCount(open: 1, inFlight: 0), "the session stays open for the next requests")
        client.shutdown()
        #expect(client.connections == HTTPConnectionCount(open: 0, inFlight: 0), "closed at shutdown")
    }

    /// A server without HTTP/2: the requests go to the HTTP/1.1 client behind, which counts in
    /// the same gauge; once answered nothing is left counted (idle kept-alive connections are not).
    @Test func theHTTP1FallbackCountsInTheSameGaugeAndSettlesAtZero() throws {
        let dir = TempDir()
        let wns = try FakeServer("wns", dir: dir)
        let client = try H2Client(options: H2ClientTests.options(.http2Preferred))
        let results = H2ClientTests.sendAll(client, (0..<10).map { _ in HTTPRequest(url: wns.url + "/ch/anything", body: Array("<toast/>".utf8)) })
        #expect(results.allSatisfy { (try? $0.get())?.httpVersion == 1 })
        eventually("the counts to settle", timeout: 5, poll: 0.02, { client.connections }, until: { $0 == HTTPConnectionCount(open: 0, inFlight: 0) })
        client.shutdown()
    }

    @Test func aProvidersClientsAreCountedTogether() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", args: ["hold-ms": "1500"], dir: dir)
        let clients = ProviderClients()
        let context = clients.noting(ProviderContext(config: Config(), credentials: CredentialCache(directory: dir.url.appendingPathComponent(".state")),
                                                       log: Log(minimum: .error)) { options in try H2Client(options: options) })
        let a = try context.makeHTTPClient(H2ClientTests.options()), b = try context.makeHTTPClient(H2ClientTests.options())
        let answered = DispatchGroup()
        for (i, client) in [a, a, b].enumerated() {
            answered.enter()
            client.execute(H2ClientTests.request(fake, token: H2ClientTests.token(i))) { _ in answered.leave() }
        }
        let held = eventually("both sessions up", timeout: 20, poll: 0.02, { clients.count() }, until: { $0.open == 2 })
        #expect(held.inFlight == 3, "\(held)")
        answered.wait()
        a.shutdown()
        b.shutdown()
        #expect(clients.count() == HTTPConnectionCount(open: 0, inFlight: 0))
    }
}
