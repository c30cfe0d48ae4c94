import Foundation
import Synchronization
import Testing
@testable import PushspoolKit

/// The libcurl transport against the fake APNs (Node http2, TLS by the test CA). Requests carry no
/// JWT, so the fake answers 403 MissingProviderToken: a real HTTP/2 response with a body and headers.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct CurlHTTPClientTests {
    static let caPEM = try? String(contentsOf: Paths.fixture("ca.pem"), encoding: .utf8)

    static func options(maxStreams: Int? = 900) -> HTTPClientOptions {
        var o = HTTPClientOptions(extraCAPEM: caPEM, requireHTTP2: true)
        o.maxStreamsPerConnection = maxStreams
        return o
    }

    static func request(_ fake: FakeServer, token: String) -> HTTPRequest {
        HTTPRequest(url: fake.url + "/3/device/" + token, headers: [("apns-topic", "com.example.app")],
                    body: Array(#"{"aps":{"alert":"hi"}}"#.utf8), timeout: 30)
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

    @Test func multiplexesConcurrentPostsOnOneH2Connection() throws {
        let dir = TempDir()
        // Answers held for 300 ms: all 300 streams are open together however busy the machine is.
        let fake = try FakeServer("apns", args: ["hold-ms": "300"], dir: dir)
        let client = try CurlHTTPClient(options: Self.options())
        let results = Self.sendAll(client, (0..<300).map { Self.request(fake, token: Self.token($0)) })
        client.shutdown()
        let responses = results.compactMap { try? $0.get() }
        #expect(responses.count == 300)
        #expect(responses.allSatisfy { $0.status == 403 && $0.httpVersion == 2 })
        #expect(responses.first?[header: "APNS-ID"] != nil)
        #expect(String(decoding: responses.first?.body ?? [], as: UTF8.self) == #"{"reason":"MissingProviderToken"}"#)
        let state = waitForIdle(fake, answered: 300)
        #expect(state["tlsConnections"] as? Int == 1)
        #expect(state["requests"] as? Int == 300)
        #expect((state["maxStreamsOpen"] as? Int ?? 0) > 100, "more than libcurl's default 100 streams in flight")
    }

    @Test func rotatesToAFreshConnectionAfterTheStreamLimit() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", dir: dir)
        let client = try CurlHTTPClient(options: Self.options(maxStreams: 100))
        let results = Self.sendAll(client, (0..<450).map { Self.request(fake, token: Self.token($0)) })
        client.shutdown()
        #expect(results.allSatisfy { (try? $0.get())?.status == 403 })
        let state = waitForIdle(fake, answered: 450)
        #expect(state["tlsConnections"] as? Int == 5)
        #expect(state["requests"] as? Int == 450)
    }

    /// GOAWAY every 100 streams: streams past each GOAWAY's last-stream-id go again on a new
    /// connection; every request gets exactly one answer.
    @Test func goawayMidFlightIsAnsweredExactlyOnce() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", args: ["goaway-every": "100", "track-limit": "0"], dir: dir)
        let client = try CurlHTTPClient(options: Self.options(maxStreams: nil))
        let results = Self.sendAll(client, (0..<2000).map { Self.request(fake, token: Self.token($0)) }, inFlight: 256)
        client.shutdown()
        let failures = results.compactMap { r -> String? in if case .failure(let e) = r { return e.message } else { return nil } }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        let state = waitForIdle(fake, answered: 2000)
        #expect(state["requests"] as? Int == 2000)
        #expect((state["goawaysSent"] as? Int ?? 0) >= 10)
    }

    @Test func refusesAServerTheExtraCAIsNeededFor() throws {
        let dir = TempDir()
        let fake = try FakeServer("apns", dir: dir)
        let client = try CurlHTTPClient(options: HTTPClientOptions(extraCAPEM: nil, requireHTTP2: true))
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
        let name = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        dir.write("roots/\(name).0", try String(contentsOf: Paths.fixture("ca.pem"), encoding: .utf8))
        // Any root that did not issue the fake's certificate (not server.pem: libcurl sets
        // X509_V_FLAG_PARTIAL_CHAIN, so a trusted leaf verifies by itself).
        let unrelated = try #require(Self.someSystemRoot())
        let trust = TrustStore(extraCAPEM: unrelated, hashedDirectory: dir.path("roots"))
        let client = try CurlHTTPClient(options: Self.options(), trust: trust)
        let result = client.executeAndWait(Self.request(fake, token: Self.token(1)))
        client.shutdown()
        #expect((try? result.get())?.status == 403)

        let untrusting = try CurlHTTPClient(options: Self.options(), trust: TrustStore(extraCAPEM: unrelated, hashedDirectory: dir.path("nothing")))
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
        let client = try CurlHTTPClient(options: Self.options())
        let result = client.executeAndWait(HTTPRequest(url: url))
        client.shutdown()
        guard case .failure(let error) = result else { Issue.record("\(url) was sent"); return }
        #expect(error.isPermanent)
    }

    @Test func connectionRefusedIsATransientTransportError() throws {
        let client = try CurlHTTPClient(options: Self.options())
        let result = client.executeAndWait(HTTPRequest(url: "https://127.0.0.1:1/3/device/00", timeout: 5))
        client.shutdown()
        guard case .failure(let error) = result else { Issue.record("no error"); return }
        #expect(!error.isPermanent)
    }

    @Test func droppingTheClientWithoutShutdownStillCompletesEveryRequest() throws {
        var client: CurlHTTPClient? = try CurlHTTPClient(options: Self.options())
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<3 {
            client?.execute(HTTPRequest(url: "https://127.0.0.1:1/3/device/00", timeout: 5)) { _ in done.signal() }
        }
        client = nil
        for _ in 0..<3 { #expect(done.wait(timeout: .now() + 30) == .success) }
    }

    @Test func shutdownIsIdempotentAndFailsLaterRequests() throws {
        let client = try CurlHTTPClient(options: Self.options())
        client.shutdown()
        client.shutdown()
        let result = client.executeAndWait(HTTPRequest(url: "https://127.0.0.1:1/"))
        guard case .failure = result else { Issue.record("request after shutdown succeeded"); return }
    }
}

/// The fake's stats once it has answered `answered` requests and every session it served has
/// closed (it flushes its file then). Gives up after `polls` × 50 ms and returns what it has.
func waitForIdle(_ fake: FakeServer, answered: Int = 0, polls: Int = 400) -> [String: Any] {
    var state = fake.state()
    for _ in 0..<polls {
        if (state["openSessions"] as? Int ?? 1) == 0, (state["answered"] as? Int ?? 0) >= answered { return state }
        usleep(50_000)
        state = fake.state()
    }
    return state
}
