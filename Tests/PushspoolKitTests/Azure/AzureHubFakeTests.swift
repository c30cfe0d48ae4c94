import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization
import Testing
@testable import PushspoolKit

/// The provider over the real libcurl transport against the fake hub (Tests/Fakes/azurehub.js),
/// which checks the SAS, formats, content types and payload limits as the hub does.
@Suite(.enabled(if: Paths.nodeAvailable)) struct AzureHubFakeTests {
    static let key = "fake-hub-key+/="

    final class Setup {
        let dir = TempDir("azure-fake")
        let hub: FakeServer
        let provider: AzureHubProvider

        init(fakeArgs: [String: String] = [:], key: String = AzureHubFakeTests.key, fcmFormat: String = "fcmV1") throws {
            hub = try FakeServer("azurehub", args: ["key": AzureHubFakeTests.key].merging(fakeArgs) { $1 }, dir: dir)
            let ca = try String(contentsOf: Paths.fixture("ca.pem"), encoding: .utf8)
            var azure = AzureConfig(connectionString: Secret(
                "Endpoint=sb://127.0.0.1:\(hub.port)/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=\(key)"),
                hub: "myhub")
            azure.fcmFormat = fcmFormat
            let context = ProviderContext(config: Config(), credentials: CredentialCache(directory: dir.url.appendingPathComponent(".state")),
                                          log: Log(minimum: .error),
                                          makeHTTPClient: { options in
                                              var o = options
                                              o.extraCAPEM = ca
                                              return try HTTPClients.make(o)
                                          })
            provider = try AzureHubProvider(config: azure, context: context)
        }

        deinit { provider.shutdown() }

        func send(_ n: RenderedNotification, to audience: Audience = .tag("username:alice")) -> ProviderResult {
            let box = ResultBox<ProviderResult>()
            provider.send(SendRequest(jobID: "j", platform: n.platform, recipient: .hub(audience), notification: n)) { box.set($0) }
            return box.wait()
        }

        var requests: [[String: Any]] { hub.state()["requests"] as? [[String: Any]] ?? [] }
    }

    /// The Azure "notify users" tutorial: bob → username:alice on wns, gcm and apns.
    static func tutorial() throws -> (SendJob, [RenderedNotification]) {
        let job = try JobParser.parse(Array(#"{"to_tag": "username:alice", "pns": ["wns", "gcm", "apns"], "from": "bob", "message": "hi"}"#.utf8),
                                      fileName: "tutorial.json")
        guard case .send(let send) = job.kind else { throw Setup.Failure() }
        return (send, try send.platforms.map { try PayloadRenderer.render(send.message, for: $0) })
    }

    @Test func tutorialCaseSendsTheThreeTutorialPayloads() throws {
        let s = try Setup(fcmFormat: "gcm")
        let (send, rendered) = try Self.tutorial()
        let results = rendered.map { s.send($0, to: send.audience) }
        #expect(results.map(\.disposition) == [.delivered, .delivered, .delivered])
        let requests = s.requests
        #expect(requests.map { $0["format"] as? String } == ["windows", "gcm", "apple"])
        #expect(requests.map { $0["tags"] as? String } == ["username:alice", "username:alice", "username:alice"])
        #expect(requests.map { $0["body"] as? String } == [
            #"<toast><visual><binding template="ToastText01"><text id="1">From bob: hi</text></binding></visual></toast>"#,
            #"{"data":{"message":"From bob: hi"}}"#,
            #"{"aps":{"alert":"From bob: hi"}}"#,
        ])
        #expect(requests.map { $0["contentType"] as? String } == ["application/xml", "application/json;charset=utf-8", "application/json;charset=utf-8"])
        // The result's id is the notification id from the fake's Location header.
        #expect(results.map(\.providerID) == requests.map { $0["notificationId"] as? String })
        // One SAS, made once and reused for all three.
        #expect((s.hub.state()["sasTokens"] as? [Any])?.count == 1)
    }

    @Test func fcmV1GoesToThePreviewAPIWithTheEnvelope() throws {
        let s = try Setup()
        let (_, rendered) = try Self.tutorial()
        #expect(s.send(rendered[1], to: .broadcast).disposition == .delivered)
        let r = try #require(s.requests.first)
        #expect(r["apiVersion"] as? String == "2015-01")
        #expect(r["format"] as? String == "fcmV1")
        #expect(r["tags"] is NSNull)
        #expect(r["body"] as? String == #"{"message":{"data":{"message":"From bob: hi"}}}"#)
    }

    @Test func aWrongKeyIsRefusedWith401AndTheTokenIsDropped() throws {
        let s = try Setup(key: "not-the-key")
        let (_, rendered) = try Self.tutorial()
        let first = s.send(rendered[2])
        #expect(first.disposition == .refreshCredentials)
        #expect(first.code == "401")
        #expect(first.reason == "signature mismatch")
        #expect(s.hub.state()["sasFailures"] as? [String] == ["signature mismatch"])
    }

    @Test func quotaThenAccepted() throws {
        let s = try Setup(fakeArgs: ["quota": "1"])
        let (_, rendered) = try Self.tutorial()
        let first = s.send(rendered[0])
        #expect(first.disposition == .retry(after: 1))
        #expect(first.code == "403")
        #expect(s.send(rendered[0]).disposition == .delivered)
    }

    @Test func sizeLimits() throws {
        let s = try Setup(fakeArgs: ["max-entity": "150"])
        let big = APNsNotification(payload: Array(("{\"aps\":{\"alert\":\"" + String(repeating: "x", count: 140) + "\"}}").utf8))
        let tooBig = s.send(.apns(big))
        #expect(tooBig.disposition == .rejected)
        #expect(tooBig.code == "413")
        #expect(tooBig.reason?.contains("too large") == true)
    }

    @Test func overThePlatformLimitIsRejectedNotRetried() throws {
        let s = try Setup()
        let big = APNsNotification(payload: Array(("{\"aps\":{\"alert\":\"" + String(repeating: "x", count: 4100) + "\"}}").utf8))
        let r = s.send(.apns(big))
        #expect(r.disposition == .rejected)
        #expect(r.code == "403")
    }
}

extension AzureHubFakeTests.Setup {
    struct Failure: Error {}
}
