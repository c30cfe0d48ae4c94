import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization
import Testing
@testable import PushspoolKit

/// FCMProvider against a scripted HTTP client: request bytes, the OAuth flow, token sharing.
@Suite struct FCMProviderTests {
    static let tokenURI = "https://oauth.test/token"
    static let sendURL = "https://fcm.test/v1/projects/pushspool-test/messages:send"
    static let notification = RenderedNotification.fcm(FCMNotification(message: .object([
        ("data", .object([("message", "From bob: hi")])),
    ])))

    /// A service-account file like the fixture, pointing at the scripted token endpoint.
    static func setUp(_ dir: TempDir, edit: (inout [String: Any]) -> Void = { _ in }) -> Config {
        let data = try! Data(contentsOf: Paths.fixture("service-account.json"))
        var obj = try! JSONSerialization.jsonObject(with: data) as! [String: Any]
        obj["token_uri"] = tokenURI
        edit(&obj)
        try! JSONSerialization.data(withJSONObject: obj).write(to: dir.url.appendingPathComponent("sa.json"))
        var config = Config()
        config.baseDirectory = dir.url
        config.fcm = FCMConfig(serviceAccountFile: "sa.json", endpoint: "https://fcm.test/")
        return config
    }

    static func request(_ token: String) -> SendRequest {
        SendRequest(jobID: "job-1", platform: .fcm, recipient: .device(ProviderTestKit.device(token, platform: .fcm)),
                    notification: notification)
    }

    /// Issues `ya29.<n>` per token request; `send` answers every message POST.
    static func client(send: @escaping @Sendable (HTTPRequest) -> HTTPResponse) -> OAuthScriptedClient {
        let issued = Atomic<Int>(0)
        return OAuthScriptedClient { r in
            if r.url == tokenURI {
                let n = issued.add(1, ordering: .relaxed).newValue
                return .success(ProviderTestKit.tokenResponse("ya29.\(n)"))
            }
            return .success(send(r))
        }
    }

    /// A provider configured by `setUp(dir)` that sends through `client`.
    static func provider(_ dir: TempDir, client: OAuthScriptedClient, clock: OAuthTestClock = OAuthTestClock()) throws -> FCMProvider {
        let config = setUp(dir)
        return try FCMProvider(config: #require(config.fcm), context: ProviderTestKit.context(config, client: client, clock: clock))
    }

    static let ok: @Sendable (HTTPRequest) -> HTTPResponse = { _ in
        ProviderTestKit.response(200, #"{"name":"projects/pushspool-test/messages/1"}"#)
    }

    @Test func buildsTheTokenGrantAndTheSendRequest() async throws {
        let dir = TempDir()
        let clock = OAuthTestClock()
        let client = Self.client(send: Self.ok)
        let provider = try Self.provider(dir, client: client, clock: clock)
        let result = await ProviderTestKit.send(provider, Self.request("tok-1"))
        #expect(result == ProviderResult(.delivered, code: "200", providerID: "projects/pushspool-test/messages/1"))

        let grant = try #require(client.requests(to: Self.tokenURI).first)
        #expect(ProviderTestKit.header(grant, "content-type") == "application/x-www-form-urlencoded")
        let form = ProviderTestKit.form(grant.body)
        #expect(form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        let jwt = ProviderTestKit.jwtParts(form["assertion"] ?? "")
        #expect(jwt.segments == 3)
        #expect(jwt.header?["alg"] == "RS256")
        #expect(jwt.header?["typ"] == "JWT")
        let iat = Int64(clock.now.timeIntervalSince1970)
        #expect(jwt.claims == .object([("iss", "pushspool@pushspool-test.iam.gserviceaccount.com"),
                                       ("scope", "https://www.googleapis.com/auth/firebase.messaging"),
                                       ("aud", .string(Self.tokenURI)), ("iat", .int(iat)), ("exp", .int(iat + 3600))]))

        let send = try #require(client.requests(to: "https://fcm.test").first)
        #expect(send.url == Self.sendURL)
        #expect(send.method == "POST")
        #expect(ProviderTestKit.header(send, "authorization") == "Bearer ya29.1")
        #expect(ProviderTestKit.header(send, "content-type") == "application/json; charset=utf-8")
        #expect(String(decoding: send.body, as: UTF8.self) == #"{"message":{"token":"tok-1","data":{"message":"From bob: hi"}}}"#)
    }

    @Test func concurrentSendsShareOneTokenFetch() async throws {
        let dir = TempDir()
        let client = Self.client(send: Self.ok)
        let provider = try Self.provider(dir, client: client)
        let results = await withTaskGroup(of: ProviderResult.self) { group in
            for i in 0..<256 { group.addTask { await ProviderTestKit.send(provider, Self.request("tok-\(i)")) } }
            return await group.reduce(into: [ProviderResult]()) { $0.append($1) }
        }
        #expect(results.count == 256)
        #expect(results.allSatisfy { $0.disposition == .delivered })
        #expect(client.requests(to: Self.tokenURI).count == 1)
        #expect(Set(client.requests(to: "https://fcm.test").map { ProviderTestKit.header($0, "authorization") }) == ["Bearer ya29.1"])
    }

    @Test func expiredAccessTokenIsDroppedAndRefetched() async throws {
        let dir = TempDir()
        let client = Self.client { r in
            ProviderTestKit.header(r, "authorization") == "Bearer ya29.1"
                ? ProviderTestKit.response(401, #"{"error":{"code":401,"status":"UNAUTHENTICATED","message":"expired"}}"#)
                : Self.ok(r)
        }
        let provider = try Self.provider(dir, client: client)
        let first = await ProviderTestKit.send(provider, Self.request("tok-1"))
        #expect(first.disposition == .refreshCredentials)
        let second = await ProviderTestKit.send(provider, Self.request("tok-1"))
        #expect(second.disposition == .delivered)
        #expect(client.requests(to: Self.tokenURI).count == 2)
    }

    @Test func thirdPartyAuthErrorIsASenderRefusalAndKeepsTheAccessToken() async throws {
        let dir = TempDir()
        let client = Self.client { _ in
            ProviderTestKit.response(401, FCMResponseTests.fcmError(401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"))
        }
        let provider = try Self.provider(dir, client: client)
        #expect(await ProviderTestKit.send(provider, Self.request("a")).disposition == .senderRefused)
        #expect(await ProviderTestKit.send(provider, Self.request("b")).disposition == .senderRefused)
        #expect(client.requests(to: Self.tokenURI).count == 1)
    }

    @Test func tokenIsRenewedBeforeItExpires() async throws {
        let dir = TempDir()
        let clock = OAuthTestClock()
        let client = Self.client(send: Self.ok)
        let provider = try Self.provider(dir, client: client, clock: clock)
        _ = await ProviderTestKit.send(provider, Self.request("a"))
        clock.advance(3600 - 301)
        _ = await ProviderTestKit.send(provider, Self.request("b"))
        #expect(client.requests(to: Self.tokenURI).count == 1)
        clock.advance(2)   // inside the 300 s renewal window
        _ = await ProviderTestKit.send(provider, Self.request("c"))
        #expect(client.requests(to: Self.tokenURI).count == 2)
    }

    @Test func refusedGrantPausesWithoutLeakingTheAssertion() async throws {
        let dir = TempDir()
        let client = OAuthScriptedClient { r in
            r.url == Self.tokenURI
                ? .success(ProviderTestKit.response(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#))
                : .success(Self.ok(r))
        }
        let provider = try Self.provider(dir, client: client)
        let r = await ProviderTestKit.send(provider, Self.request("a"))
        #expect(r.disposition == .credentialsBroken)
        #expect(r.code == "400")
        #expect(r.reason == "fcm token endpoint answered HTTP 400 invalid_grant: Invalid JWT Signature.")
        let assertion = ProviderTestKit.form(try #require(client.requests.first).body)["assertion"] ?? "?"
        #expect(!(r.reason ?? "").contains(assertion))
        #expect(client.requests(to: "https://fcm.test").isEmpty)
    }

    @Test func unreachableTokenEndpointIsRetried() async throws {
        let dir = TempDir()
        let client = OAuthScriptedClient { _ in .failure(HTTPTransportError("connection refused")) }
        let provider = try Self.provider(dir, client: client)
        let r = await ProviderTestKit.send(provider, Self.request("a"))
        #expect(r.disposition == .retry(after: nil))
        #expect(r.code == "transport")
    }

    @Test func oversizeMessageIsRejectedBeforeAnyRequest() async throws {
        let dir = TempDir()
        let client = Self.client(send: Self.ok)
        let provider = try Self.provider(dir, client: client)
        let big = RenderedNotification.fcm(FCMNotification(message: .object([
            ("data", .object([("message", .string(String(repeating: "x", count: 4100)))])),
        ])))
        var request = Self.request("a")
        request.notification = big
        let r = await ProviderTestKit.send(provider, request)
        #expect(r.disposition == .rejected)
        #expect(r.code == "payload-too-large")
        #expect(client.requests.isEmpty)
    }

    @Test func setupReportsEveryServiceAccountProblemOnItsOwnLine() throws {
        let dir = TempDir()
        let config = Self.setUp(dir) { obj in
            obj["client_email"] = nil
            obj["project_id"] = 42
            obj["private_key"] = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n"
        }
        let context = ProviderTestKit.context(config, client: OAuthScriptedClient { _ in .failure(HTTPTransportError("x")) },
                                              clock: OAuthTestClock())
        let error = #expect(throws: ProviderSetupError.self) { try FCMProvider(config: config.fcm!, context: context) }
        let problems = error?.problems ?? []
        #expect(problems.count == 3)
        #expect(problems.contains { $0.contains("\"project_id\" must be a non-empty string") })
        #expect(problems.contains { $0.contains("\"client_email\" is missing") })
        #expect(problems.contains { $0.contains("private_key does not parse") })
        #expect(!problems.joined().contains("not a key"))
    }

    @Test func setupReportsMissingFileAndPlainHTTPEndpoint() throws {
        let dir = TempDir()
        var config = Config()
        config.baseDirectory = dir.url
        config.fcm = FCMConfig(serviceAccountFile: "nope.json", endpoint: "http://fcm.test")
        let context = ProviderTestKit.context(config, client: OAuthScriptedClient { _ in .failure(HTTPTransportError("x")) },
                                              clock: OAuthTestClock())
        let error = #expect(throws: ProviderSetupError.self) { try FCMProvider(config: config.fcm!, context: context) }
        #expect(error?.problems.count == 2)
        #expect(error?.problems.first?.hasPrefix("providers.fcm.service_account_file: cannot read") == true)
        #expect(error?.problems.last == "providers.fcm.endpoint: \"http://fcm.test\" is not an https URL")
    }
}
