import Foundation
@testable import PushspoolHTTP
import Synchronization
import Testing
@testable import PushspoolKit

/// The HTTP/2 transport (nghttp2 over OpenSSL) against the fake APNs (Node http2, TLS by the test
/// CA). Requests carry no JWT, so the fake answers 403 MissingProviderToken: a real HTTP/2 response
/// with a body and headers, counted by the fake like any other.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct H2ClientTests {
    static let caPEM = try? String(contentsOf: Paths.fixture("ca.pem"), encoding: .utf8)

    static func options(_ versions: HTTPVersionPolicy = .http2Only) -> HTTPClientOptions {
        HTTPClientOptions(extraCAPEM: caPEM, versions: versions)
    }

    static func request(_ fake: FakeServer, token: String, timeout: Double = 30) -> HTTPRequest {
        HTTPRequest(url: fake.url + "/3/device/" + token, headers: [("apns-topic", "com.example.app")],
                    body: Array(#"{"aps":{"alert":"hi"}}"#.utf8), timeout: timeout)
    }

    /// Sends `count` requests at once and waits for all of them.
    static func sendAll(_ client: any HTTPClient, _ requests: [HTTPRequest],
                        inFlight: Int = 100_000) -> [Result<HTTPResponse, HTTPTransportError>] {
        let results = Mutex<[Int: Result<HTTPResponse, HTTPTransportError>]>([:])
        let group = DispatchGroup()
        let slots = DispatchSemaphore(value: inFlight)
        for (i, r) in requests.enumerated() {
            slots.wait()
            group.enter()
            client.execute(r) { result in
                results.withLock { $0[i] = result }
                slots.signal()
                group.leave()
            }
        }
        group.wait()
        return results.withLock { dict in (0..<requests.count).map { dict[$0]! } }
    }

    static func token(_ i: Int) -> String { String(format: "%064x", i) }

    static func failures(_ results: [Result<HTTPResponse, HTTPTransportError>]) -> [String] {
        results.compactMap { r -> String? in if case .failure(let e) = r { return e.message } else { return nil } }
    }

    @Test func multiplexesConcurrentPostsOnOneLongLivedConnection() throws {
        let dir = TempDir()
        // Answers held for 300 ms: all 300 streams are open together however busy the machine is.
        let fake = try FakeServer("apns", args: ["hold-ms": "300"], dir: dir)
        let client = try H2Client(options: Self.options())
        let results = Self.sendAll(client, (0..<300).map { Self.request(fake, token: Self.token($0)) })
        // A second wave reuses the same connection: no rotation, no second handshake.
        let again = Self.sendAll(client, (300..<2300).map { Self.request(fake, token: Self.token($0)) }, inFlight: 500)
        client.shutdown()
        let responses = (results + again).compactMap { try? $0.get() }
        #expect(responses.count == 2300)
        #expect(responses.allSatisfy { $0.status == 403 && $0.httpVersion == 2 })
        #expect(responses.first?[header: "APNS-ID"] != nil)
        #expect(String(decoding: responses.first?.body ?? [], as: UTF8.self) == #"{"reason":"MissingProviderToken"}"#)
        let state = waitForIdle(fake, answered: 2300)
        #expect(state["tlsConnections"] as? Int == 1)
        #expect(state["requests"] as? Int == 2300)
        #expect((state["maxStreamsOpen"] as? Int ?? 0) >= 300, "every request in flight at once")
        #expect(client.connectionsOpened == 1)
    }

    /// A request that names the answer's fields it reads gets those only; one that names none gets all.
    @Test func keepsOnlyTheResponseFieldsAsked() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", dir: dir)
        let client = try H2Client(options: Self.options())
        var some = Self.request(fake, token: Self.token(1))
        some.responseHeaders = ["apns-id", "retry-after"]
        let results = Self.sendAll(client, [some, Self.request(fake, token: Self.token(2))])
        client.shutdown()
        let asked = try #require(try? results[0].get()), all = try #require(try? results[1].get())
        #expect(asked.fields.map(\.name) == ["apns-id"])
        #expect(asked[header: "apns-id"] != nil && asked[header: "content-type"] == nil)
        #expect(all[header: "apns-id"] != nil && all[header: "content-type"] == "application/json")
    }

    /// The server allows 50 streams: the client keeps to it (never refused for it) and opens a
    /// second connection only because of it.
    @Test func keepsToTheServersStreamLimit() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", args: ["hold-ms": "200", "max-streams": "50"], dir: dir)
        var options = Self.options()
        options.maxConnectionsPerHost = 2
        let client = try H2Client(options: options)
        let results = Self.sendAll(client, (0..<400).map { Self.request(fake, token: Self.token($0)) })
        client.shutdown()
        #expect(Self.failures(results).isEmpty)
        let state = waitForIdle(fake, answered: 400)
        #expect(state["requests"] as? Int == 400)
        #expect(state["tlsConnections"] as? Int == 2)
        #expect((state["maxStreamsOpen"] as? Int ?? 0) <= 50)
    }

    /// Demand for 200 streams at the server's 50 opens 4 connections; once demand has fitted in
    /// one for `extraConnectionIdle`, the extras close one by one and the last stays open.
    @Test func extraConnectionsCloseWhenDemandFalls() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", args: ["hold-ms": "200", "max-streams": "50", "track-limit": "0"], dir: dir)
        var options = Self.options()
        options.extraConnectionIdle = 0.5
        let client = try H2Client(options: options)
        let results = Self.sendAll(client, (0..<1000).map { Self.request(fake, token: Self.token($0)) }, inFlight: 200)
        #expect(Self.failures(results).isEmpty)
        // 4 at least: on a loaded machine a stall of the caller longer than the idle time may
        // already have retired one, and demand then opened another.
        let opened = client.connectionsOpened
        #expect(opened >= 4)
        #expect((fake.state()["maxOpenSessions"] as? Int ?? 0) >= 4)
        let state = eventually("the extra connections to close", timeout: 30, poll: 0.05, { fake.state() },
                               until: { ($0["openSessions"] as? Int ?? 0) == 1 && ($0["closedSessions"] as? Int ?? 0) >= 3 })
        #expect(state["openSessions"] as? Int == 1, "the extras closed, one stayed")
        // The one left still carries requests, on the same connection.
        let again = Self.sendAll(client, (1000..<1010).map { Self.request(fake, token: Self.token($0)) })
        #expect(Self.failures(again).isEmpty)
        #expect(client.connectionsOpened == opened)
        client.shutdown()
    }

    /// GOAWAY every 100 streams: streams past each GOAWAY's last-stream-id go again on a new
    /// connection; every request gets exactly one answer and the fake processes each once.
    @Test func goawayMidFlightIsAnsweredExactlyOnce() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", args: ["goaway-every": "100", "track-limit": "0"], dir: dir)
        let client = try H2Client(options: Self.options())
        let results = Self.sendAll(client, (0..<2000).map { Self.request(fake, token: Self.token($0)) }, inFlight: 256)
        client.shutdown()
        #expect(Self.failures(results).isEmpty, "\(Self.failures(results).prefix(3))")
        let state = waitForIdle(fake, answered: 2000)
        #expect(state["requests"] as? Int == 2000)
        #expect((state["goawaysSent"] as? Int ?? 0) >= 10)
    }

    /// RST_STREAM(REFUSED_STREAM) means "not processed": the client sends it again by itself.
    /// RST_STREAM(INTERNAL_ERROR) may follow processing: the caller gets the failure to decide.
    @Test func refusedStreamsAreResentAndResetOnesReported() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", args: ["refuse-every": "7", "track-limit": "0"], dir: dir)
        let client = try H2Client(options: Self.options())
        let results = Self.sendAll(client, (0..<500).map { Self.request(fake, token: Self.token($0)) })
        client.shutdown()
        #expect(Self.failures(results).isEmpty)
        let state = waitForIdle(fake, answered: 500)
        #expect(state["requests"] as? Int == 500)
        #expect((state["refused"] as? Int ?? 0) >= 70)

        let resetting = try FakeServer("apns", args: ["reset-every": "10", "track-limit": "0"], dir: dir)
        let client2 = try H2Client(options: Self.options())
        let results2 = Self.sendAll(client2, (0..<200).map { Self.request(resetting, token: Self.token($0)) })
        client2.shutdown()
        let failed = Self.failures(results2)
        #expect(failed.count == 20)
        #expect(failed.allSatisfy { $0.contains("reset by the server") })
        #expect(client2.connectionsOpened == 1, "a reset stream does not cost the connection")
    }

    /// The server goes away and comes back on the same port: requests in flight fail as
    /// transport errors (retryable), later ones reconnect.
    @Test func reconnectsAfterTheServerRestarts() throws {
        let dir = TempDir()
        let first = try FakeServer("apns", dir: dir)
        let port = first.port
        let client = try H2Client(options: Self.options())
        #expect((try? client.executeAndWait(Self.request(first, token: Self.token(1))).get())?.status == 403)
        first.stop()
        let down = client.executeAndWait(Self.request(first, token: Self.token(2), timeout: 5))
        guard case .failure(let error) = down else { Issue.record("answered by a stopped server"); return }
        #expect(!error.isPermanent)
        let second = try FakeServer("apns", args: ["port": String(port)], dir: dir)
        #expect(second.port == port)
        let back = client.executeAndWait(Self.request(second, token: Self.token(3)))
        client.shutdown()
        #expect((try? back.get())?.status == 403)
        #expect(client.connectionsOpened == 2)
    }

    /// A server that does not offer h2: APNs refuses to go on (permanent), a preferring client
    /// speaks HTTP/1.1 to it.
    @Test func aServerWithoutHTTP2IsRefusedOrSpokenToInHTTP1() throws {
        let dir = TempDir()
        let wns = try FakeServer("wns", dir: dir)
        let strict = try H2Client(options: Self.options(.http2Only))
        let refused = strict.executeAndWait(HTTPRequest(url: wns.url + "/ch/anything", body: Array("<toast/>".utf8)))
        strict.shutdown()
        guard case .failure(let error) = refused else { Issue.record("h2-only client spoke HTTP/1.1"); return }
        #expect(error.isPermanent)

        let preferring = try H2Client(options: Self.options(.http2Preferred))
        let answered = preferring.executeAndWait(HTTPRequest(url: wns.url + "/ch/anything", body: Array("<toast/>".utf8)))
        preferring.shutdown()
        let response = try answered.get()
        #expect(response.httpVersion == 1)
        #expect(response.status == 401, "no bearer token: WNS says 401")
    }

    @Test func requestsPastTheirDeadlineFailAndTheConnectionLives() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", args: ["hold-ms": "3000"], dir: dir)
        let client = try H2Client(options: Self.options())
        let started = Date()
        let result = client.executeAndWait(Self.request(fake, token: Self.token(1), timeout: 1))
        guard case .failure(let error) = result else { Issue.record("answered after its deadline"); client.shutdown(); return }
        #expect(error.message.contains("no response within"))
        #expect(Date().timeIntervalSince(started) < 2.5)
        client.shutdown()
        #expect(client.connectionsOpened == 1)
    }

    /// A 1 MiB answer is read to its end (the connection goes on) but only its first 64 KiB kept.
    @Test func aHugeResponseBodyIsCappedAndTheConnectionLives() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", dir: dir)
        let client = try H2Client(options: Self.options())
        defer { client.shutdown() }
        // A provider token the fake accepts, so that it answers the scripted 400 with its huge body.
        let key = try SigningKey(pem: String(contentsOf: Paths.fixture("AuthKey_TESTKEY123.p8"), encoding: .utf8))
        let jwt = try JWT.sign(header: [("alg", .string("ES256")), ("kid", .string("TESTKEY123"))],
                               claims: [("iss", .string("TEAMID1234")), ("iat", .int(Int64(Date().timeIntervalSince1970)))], key: key)
        func signed(_ token: String) -> HTTPRequest {
            var r = Self.request(fake, token: token)
            r.headers += [("authorization", "bearer \(jwt)"), ("apns-push-type", "alert")]
            return r
        }
        let huge = try client.executeAndWait(signed("b16b" + String(repeating: "0", count: 60))).get()
        #expect(huge.status == 400)
        #expect(huge.body.count == HTTPResponse.maxBodyBytes)
        let next = try client.executeAndWait(signed(Self.token(2))).get()
        #expect(next.status == 200)
        #expect(client.connectionsOpened == 1)
    }

    @Test func refusesAServerTheExtraCAIsNeededFor() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", dir: dir)
        let client = try H2Client(options: HTTPClientOptions(extraCAPEM: nil, versions: .http2Only))
        let result = client.executeAndWait(Self.request(fake, token: Self.token(1)))
        client.shutdown()
        guard case .failure(let error) = result else { Issue.record("untrusted server answered"); return }
        #expect(error.isPermanent)
        #expect(waitForIdle(fake)["requests"] as? Int == 0)
    }

    /// The roots come from a hashed directory and the extra PEM adds to them (it does not
    /// replace them): here the directory holds the test CA and the extra PEM is an unrelated cert.
    @Test(.enabled(if: someSystemRoot() != nil)) func hashedDirectoryAndExtraPEMAreBothTrusted() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", dir: dir)
        let hash = Process()
        hash.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        hash.arguments = ["x509", "-hash", "-noout", "-in", Paths.fixture("ca.pem").path]
        let out = Pipe()
        hash.standardOutput = out
        try hash.run()
        hash.waitUntilExit()
        let name = String(decoding: readToEnd(out.fileHandleForReading.fileDescriptor), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        dir.write("roots/\(name).0", try String(contentsOf: Paths.fixture("ca.pem"), encoding: .utf8))
        // Any root that did not issue the fake's certificate.
        let unrelated = try #require(Self.someSystemRoot())
        let client = try H2Client(options: Self.options(), rootsDirectory: dir.path("roots"), extraCAPEM: unrelated)
        let result = client.executeAndWait(Self.request(fake, token: Self.token(1)))
        client.shutdown()
        #expect((try? result.get())?.status == 403)

        let untrusting = try H2Client(options: Self.options(), rootsDirectory: dir.path("nothing"), extraCAPEM: unrelated)
        let refused = untrusting.executeAndWait(Self.request(fake, token: Self.token(2)))
        untrusting.shutdown()
        guard case .failure(let error) = refused else { Issue.record("trusted without the CA"); return }
        #expect(error.isPermanent)
    }

    static func someSystemRoot() -> String? {
        let dir = "/etc/ssl/certs"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".0") }.sorted()
        return names.first.flatMap { try? String(contentsOfFile: dir + "/" + $0, encoding: .utf8) }
    }

    @Test(arguments: ["http://127.0.0.1:1/x", "ftp://127.0.0.1/x", "not a url"])
    func refusesNonHTTPSURLs(url: String) throws {
        let client = try H2Client(options: Self.options())
        let result = client.executeAndWait(HTTPRequest(url: url))
        client.shutdown()
        guard case .failure(let error) = result else { Issue.record("\(url) was sent"); return }
        #expect(error.isPermanent)
    }

    @Test func connectionRefusedIsATransientTransportError() throws {
        let client = try H2Client(options: Self.options())
        let result = client.executeAndWait(HTTPRequest(url: "https://127.0.0.1:1/3/device/00", timeout: 5))
        client.shutdown()
        guard case .failure(let error) = result else { Issue.record("no error"); return }
        #expect(!error.isPermanent)
    }

    @Test func droppingTheClientWithoutShutdownStillCompletesEveryRequest() throws {
        var client: H2Client? = try H2Client(options: Self.options())
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<3 {
            client?.execute(HTTPRequest(url: "https://127.0.0.1:1/3/device/00", timeout: 5)) { _ in done.signal() }
        }
        client = nil
        for _ in 0..<3 { #expect(done.wait(timeout: .now() + 30) == .success) }
    }

    @Test func shutdownIsIdempotentAndFailsLaterRequests() throws {
        let client = try H2Client(options: Self.options())
        client.shutdown()
        client.shutdown()
        let result = client.executeAndWait(HTTPRequest(url: "https://127.0.0.1:1/"))
        guard case .failure = result else { Issue.record("request after shutdown succeeded"); return }
    }
}

/// The fake's stats once it has answered `answered` requests and every session it served has
/// closed (it flushes its file then); what it has after `timeout` seconds otherwise.
func waitForIdle(_ fake: FakeServer, answered: Int = 0, timeout: Double = 20,
                 sourceLocation: SourceLocation = #_sourceLocation) -> [String: Any] {
    eventually("the fake to have answered \(answered) and closed every session", timeout: timeout, poll: 0.05,
               sourceLocation: sourceLocation, { fake.state() },
               until: { ($0["openSessions"] as? Int ?? 1) == 0 && ($0["answered"] as? Int ?? 0) >= answered })
}
