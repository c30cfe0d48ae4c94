import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization
import Testing
@testable import PushspoolKit

/// WNSProvider against a scripted HTTP client: token grant, channel POST headers, allow-list.
@Suite struct WNSProviderTests {
    static let tokenURL = "https://login.test/accesstoken.srf"
    static let secret = "s3cr&t=+/x"
    static let channel = "https://dm3p.notify.windows.com/?token=AwYAAAD"
    static let toast = #"<toast><visual><binding template="ToastText01"><text id="1">From bob: hi &amp; bye</text></binding></visual></toast>"#

    static func config(allowedHosts: [String] = ["notify.windows.com"]) -> Config {
        var config = Config()
        config.wns = WNSConfig(clientID: "ms-app://s-1-15-2-1", clientSecret: Secret(secret), tokenEndpoint: tokenURL,
                               scope: nil, allowedHosts: allowedHosts)
        return config
    }

    static func request(_ handle: String, _ n: WNSNotification = WNSNotification(body: Array(toast.utf8))) -> SendRequest {
        SendRequest(jobID: "job-1", platform: .wns, recipient: .device(ProviderTestKit.device(handle, platform: .wns)),
                    notification: .wns(n))
    }

    static func client(channel: @escaping @Sendable (HTTPRequest) -> HTTPResponse = { _ in
        ProviderTestKit.response(200, headers: ["x-wns-status": "received", "x-wns-msg-id": "M1"])
    }) -> OAuthScriptedClient {
        let issued = Atomic<Int>(0)
        return OAuthScriptedClient { r in
            if r.url == tokenURL {
                let n = issued.add(1, ordering: .relaxed).newValue
                return .success(ProviderTestKit.tokenResponse("wns-\(n)", expiresIn: 86400))
            }
            return .success(channel(r))
        }
    }

    static func provider(_ client: OAuthScriptedClient, _ config: Config = config()) throws -> WNSProvider {
        try WNSProvider(config: #require(config.wns), context: ProviderTestKit.context(config, client: client, clock: OAuthTestClock()))
    }

    @Test func buildsTheClientCredentialsGrantAndTheChannelPost() async throws {
        let client = Self.client()
        let provider = try Self.provider(client)
        let r = await ProviderTestKit.send(provider, Self.request(Self.channel, WNSNotification(body: Array(Self.toast.utf8), ttlSeconds: 600)))
        #expect(r == ProviderResult(.delivered, code: "200", providerID: "M1"))

        let grant = try #require(client.requests(to: Self.tokenURL).first)
        #expect(String(decoding: grant.body, as: UTF8.self) ==
            "grant_type=client_credentials&client_id=ms-app%3A%2F%2Fs-1-15-2-1&client_secret=s3cr%26t%3D%2B%2Fx&scope=notify.windows.com")
        #expect(ProviderTestKit.header(grant, "content-type") == "application/x-www-form-urlencoded")

        let post = try #require(client.requests(to: Self.channel).first)
        #expect(post.method == "POST")
        #expect(ProviderTestKit.header(post, "authorization") == "Bearer wns-1")
        #expect(ProviderTestKit.header(post, "content-type") == "text/xml")
        #expect(ProviderTestKit.header(post, "x-wns-type") == "wns/toast")
        #expect(ProviderTestKit.header(post, "x-wns-ttl") == "600")
        #expect(post.body == Array(Self.toast.utf8))
    }

    @Test func rawNotificationsAreOctetStreamsWithoutTTL() async throws {
        let client = Self.client()
        let provider = try Self.provider(client)
        _ = await ProviderTestKit.send(provider, Self.request(Self.channel, WNSNotification(body: [1, 2, 3], type: "wns/raw")))
        let post = try #require(client.requests(to: Self.channel).first)
        #expect(ProviderTestKit.header(post, "content-type") == "application/octet-stream")
        #expect(ProviderTestKit.header(post, "x-wns-type") == "wns/raw")
        #expect(ProviderTestKit.header(post, "x-wns-ttl") == nil)
    }

    @Test(arguments: ["https://evil.example/?token=x", "http://dm3p.notify.windows.com/?token=x",
                      "https://dm3p.notify.windows.com@evil.example/"])
    func channelOutsideTheAllowListMakesNoRequestAtAll(_ handle: String) async throws {
        let client = Self.client()
        let provider = try Self.provider(client)
        let r = await ProviderTestKit.send(provider, Self.request(handle))
        #expect(r.disposition == .rejected)
        #expect(r.code == "host-not-allowed")
        #expect(!(r.reason ?? "").contains("token=x"))
        #expect(client.requests.isEmpty)
    }

    @Test func expiredTokenIsRefreshedOnce() async throws {
        let client = Self.client { r in
            ProviderTestKit.header(r, "authorization") == "Bearer wns-1"
                ? ProviderTestKit.response(401, headers: ["x-wns-error-description": "Token expired"])
                : ProviderTestKit.response(200, headers: ["x-wns-status": "received"])
        }
        let provider = try Self.provider(client)
        #expect(await ProviderTestKit.send(provider, Self.request(Self.channel)).disposition == .refreshCredentials)
        #expect(await ProviderTestKit.send(provider, Self.request(Self.channel)).disposition == .delivered)
        #expect(client.requests(to: Self.tokenURL).count == 2)
    }

    @Test func refusedClientCredentialsPauseWithoutLeakingTheSecret() async throws {
        let client = OAuthScriptedClient { r in
            .success(r.url == Self.tokenURL
                ? ProviderTestKit.response(400, #"{"error":"invalid_client","error_description":"bad client_secret"}"#)
                : ProviderTestKit.response(200))
        }
        let provider = try Self.provider(client)
        let r = await ProviderTestKit.send(provider, Self.request(Self.channel))
        #expect(r.disposition == .credentialsBroken)
        #expect(r.reason == "wns token endpoint answered HTTP 400 invalid_client: bad client_secret")
        #expect(!(r.reason ?? "").contains(Self.secret))
        #expect(client.requests(to: Self.channel).isEmpty)
    }

    @Test func oversizePayloadIsRejectedBeforeAnyRequest() async throws {
        let client = Self.client()
        let provider = try Self.provider(client)
        let r = await ProviderTestKit.send(provider, Self.request(Self.channel, WNSNotification(body: Array(repeating: 0x41, count: 5001))))
        #expect(r.code == "payload-too-large")
        #expect(client.requests.isEmpty)
    }

    @Test func setupReportsEveryProblemOnItsOwnLine() {
        var config = Config()
        config.wns = WNSConfig(clientID: "", clientSecret: Secret(""), tokenEndpoint: "http://login.test/t", scope: nil,
                               allowedHosts: [])
        let context = ProviderTestKit.context(config, client: Self.client(), clock: OAuthTestClock())
        let error = #expect(throws: ProviderSetupError.self) { try WNSProvider(config: config.wns!, context: context) }
        #expect(error?.problems == [
            "providers.wns.client_id: missing",
            "providers.wns.client_secret: missing or empty",
            "providers.wns.token_endpoint: \"http://login.test/t\" is not an https URL",
            "providers.wns.allowed_hosts: empty, so no channel could ever be used",
        ])
    }

    @Test(arguments: [
        (WNSConfig.Auth.entra, nil, "providers.wns.tenant_id: required with auth \"entra\" (the directory's id or domain: A-Z a-z 0-9 . -)"),
        (.entra, "a/b", "providers.wns.tenant_id: required with auth \"entra\" (the directory's id or domain: A-Z a-z 0-9 . -)"),
        (.package, "contoso.onmicrosoft.com", "providers.wns.tenant_id: only with auth \"entra\""),
    ] as [(WNSConfig.Auth, String?, String)])
    func entraNeedsATenant(auth: WNSConfig.Auth, tenant: String?, expected: String) {
        var config = Self.config()
        config.wns?.auth = auth
        config.wns?.tenantID = tenant
        let context = ProviderTestKit.context(config, client: Self.client(), clock: OAuthTestClock())
        let error = #expect(throws: ProviderSetupError.self) { try WNSProvider(config: config.wns!, context: context) }
        #expect(error?.problems == [expected])
    }

    @Test func tagAndTTLHeaders() {
        let r = WNSProvider.request(channel: Self.channel, bearer: "t",
                                    notification: WNSNotification(body: [0x41], type: "wns/raw", ttlSeconds: 60, tag: "score"))
        #expect(r.headers.map { "\($0.0): \($0.1)" } == ["Authorization: Bearer t", "Content-Type: application/octet-stream",
                                                        "X-WNS-Type: wns/raw", "X-WNS-TTL: 60", "X-WNS-Tag: score"])
    }
}
