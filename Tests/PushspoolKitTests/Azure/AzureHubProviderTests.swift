import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization
import Testing
@testable import PushspoolKit

/// An HTTP client that answers from a script and records what it was asked.
final class AzureScriptedHTTPClient: HTTPClient {
    private let script: Mutex<[Result<HTTPResponse, HTTPTransportError>]>
    let requests = Mutex<[HTTPRequest]>([])
    let shutdowns = Mutex(0)

    init(_ script: [Result<HTTPResponse, HTTPTransportError>]) { self.script = Mutex(script) }

    func execute(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        requests.withLock { $0.append(request) }
        let next = script.withLock { $0.isEmpty ? .success(HTTPResponse(status: 201)) : $0.removeFirst() }
        completion(next)
    }

    func condemnConnections() {}
    func shutdown() { shutdowns.withLock { $0 += 1 } }

    func authorization(_ i: Int) -> String? {
        requests.withLock { $0.indices.contains(i) ? $0[i].headers.first { $0.0 == "Authorization" }?.1 : nil }
    }
}

final class AzureTestClock: Sendable {
    private let t: Mutex<Double>
    init(_ t: Double) { self.t = Mutex(t) }
    func advance(_ s: Double) { t.withLock { $0 += s } }
    var now: Date { Date(timeIntervalSince1970: t.withLock { $0 }) }
}

@Suite struct AzureHubProviderTests {
    static let connection = "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=SECRETKEY="
    static let start = 1_800_000_000.0

    struct Harness {
        let provider: AzureHubProvider
        let client: AzureScriptedHTTPClient
        let clock: AzureTestClock
    }

    static func harness(_ script: [Result<HTTPResponse, HTTPTransportError>] = [], azure: AzureConfig? = nil,
                        cacheDir: URL? = nil, clock: AzureTestClock = AzureTestClock(start)) throws -> Harness {
        let client = AzureScriptedHTTPClient(script)
        let context = ProviderContext(config: Config(), credentials: CredentialCache(directory: cacheDir, clock: { clock.now }),
                                      log: Log(minimum: .error), makeHTTPClient: { _ in client })
        let config = azure ?? AzureConfig(connectionString: Secret(connection), hub: "myhub")
        return Harness(provider: try AzureHubProvider(config: config, context: context), client: client, clock: clock)
    }

    static func send(_ p: any PushProvider, _ audience: Audience = .tag("username:alice"),
                     _ n: RenderedNotification = .apns(APNsNotification(payload: Array(#"{"aps":{"alert":"x"}}"#.utf8)))) -> ProviderResult {
        let box = Mutex<ProviderResult?>(nil)
        p.send(SendRequest(jobID: "j1", platform: n.platform, recipient: .hub(audience), notification: n)) { r in
            box.withLock { $0 = r }
        }
        return box.withLock { $0! }
    }

    static func sas(expiry: Int) -> String {
        AzureSAS.token(resourceURI: "https://ns.servicebus.windows.net/myhub", keyName: "DefaultFullSharedAccessSignature",
                       key: "SECRETKEY=", expiry: expiry)
    }

    @Test func signsWithTheConnectionStringAndReusesTheTokenUntilNearExpiry() throws {
        let h = try Self.harness()
        #expect(Self.send(h.provider) == ProviderResult(.delivered, code: "201"))
        #expect(h.client.authorization(0) == Self.sas(expiry: 1_800_003_600))
        h.clock.advance(3600 - 301)                      // still outside the 5-minute renewal window
        _ = Self.send(h.provider)
        #expect(h.client.authorization(1) == Self.sas(expiry: 1_800_003_600))
        h.clock.advance(2)                               // inside it: a fresh token
        _ = Self.send(h.provider)
        #expect(h.client.authorization(2) == Self.sas(expiry: 1_800_003_600 + 3301))
        #expect(h.client.requests.withLock { $0[0].url } == "https://ns.servicebus.windows.net/myhub/messages/?api-version=2015-01")
    }

    @Test func a401DropsTheTokenSoTheRetryIsSignedAfresh() throws {
        let h = try Self.harness([.success(HTTPResponse(status: 401)), .success(HTTPResponse(status: 201))])
        let first = Self.send(h.provider)
        #expect(first.disposition == .refreshCredentials)
        #expect(!(first.reason ?? "").contains("SharedAccessSignature"))
        h.clock.advance(1)
        #expect(Self.send(h.provider).disposition == .delivered)
        #expect(h.client.authorization(1) == Self.sas(expiry: 1_800_003_601))
    }

    @Test func processesSharingTheSpoolShareTheToken() throws {
        let dir = TempDir("azure-cache")
        let clock = AzureTestClock(Self.start)
        let a = try Self.harness(cacheDir: dir.url, clock: clock)
        _ = Self.send(a.provider)
        clock.advance(60)
        let b = try Self.harness(cacheDir: dir.url, clock: clock)   // a second process: empty memory cache
        _ = Self.send(b.provider)
        #expect(b.client.authorization(0) == a.client.authorization(0))
        let files = dir.list(".")
        #expect(!files.isEmpty)
        #expect(files.allSatisfy { !$0.contains("SECRETKEY") })
    }

    @Test func transportFailures() throws {
        let h = try Self.harness([.failure(HTTPTransportError("connection reset")),
                                  .failure(HTTPTransportError("certificate verify failed", isPermanent: true))])
        #expect(Self.send(h.provider) == ProviderResult(.retry(after: nil), code: "transport", reason: "connection reset"))
        #expect(Self.send(h.provider).disposition == .credentialsBroken)
    }

    /// The shared opening's answer, naming the provider as every provider's does.
    @Test func aShutDownHubAnswersARetryNamingItself() throws {
        let h = try Self.harness()
        h.provider.shutdown()
        #expect(Self.send(h.provider) == ProviderResult(.retry(after: nil), code: "shutdown", reason: "azure provider is shut down"))
        #expect(h.client.requests.withLock { $0.count } == 0)
    }

    @Test func audiencesBeyondTheHubLimitsFailWithoutARequest() throws {
        let h = try Self.harness()
        let seven = Audience.expression(Self.and((1...7).map { "t\($0)" }), source: "t1 && … && t7")
        let result = Self.send(h.provider, seven)
        #expect(result.disposition == .rejected)
        #expect(result.reason?.contains("at most 6") == true)
        #expect(h.client.requests.withLock { $0.count } == 0)
    }

    @Test func aDeviceRecipientIsRefused() throws {
        let h = try Self.harness()
        let device = Device(id: "d1", platform: .apns, handle: "abc", tags: ["x"], updatedAt: Date())
        let box = Mutex<ProviderResult?>(nil)
        h.provider.send(SendRequest(jobID: "j", platform: .apns, recipient: .device(device),
                                    notification: .apns(APNsNotification(payload: [0x7B, 0x7D])))) { r in box.withLock { $0 = r } }
        #expect(box.withLock { $0?.disposition } == .rejected)
        #expect(h.client.requests.withLock { $0.count } == 0)
    }

    @Test func shutdownIsIdempotentAndLaterSendsAskForARetry() throws {
        let h = try Self.harness()
        h.provider.shutdown()
        h.provider.shutdown()
        #expect(h.client.shutdowns.withLock { $0 } == 1)
        #expect(Self.send(h.provider).disposition == .retry(after: nil))
        #expect(h.client.requests.withLock { $0.count } == 0)
    }

    @Test func setupReportsEveryProblemAtOnce() {
        var config = AzureConfig(connectionString: Secret("Endpoint=sb://ns/;SharedAccessKey=SECRETKEY"), hub: "-bad hub")
        config.fcmFormat = "apns"
        config.apiVersion = "2015 01"
        let context = ProviderContext(config: Config(), credentials: CredentialCache(directory: nil), log: Log(minimum: .error),
                                      makeHTTPClient: { _ in AzureScriptedHTTPClient([]) })
        #expect {
            _ = try AzureHubProvider(config: config, context: context)
        } throws: { error in
            guard let e = error as? ProviderSetupError else { return false }
            let fields = e.problems.map { $0.split(separator: ":").first.map(String.init) ?? "" }
            return fields == ["providers.azure.connection_string", "providers.azure.hub", "providers.azure.fcm_format",
                              "providers.azure.api_version"]
                && !e.description.contains("SECRETKEY")
        }
    }

    @Test func factoryNeedsTheAzureSection() {
        let context = ProviderContext(config: Config(), credentials: CredentialCache(directory: nil), log: Log(minimum: .error),
                                      makeHTTPClient: { _ in AzureScriptedHTTPClient([]) })
        #expect(throws: ProviderSetupError.self) { _ = try ProviderFactory.make(name: "azure", context: context) }
    }

    static func and(_ tags: [String]) -> TagExpression {
        tags.dropFirst().reduce(TagExpression.tag(tags[0])) { .and($0, .tag($1)) }
    }

    static func or(_ tags: [String]) -> TagExpression {
        tags.dropFirst().reduce(TagExpression.tag(tags[0])) { .or($0, .tag($1)) }
    }
}

@Suite struct AzureHubLimitsTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String, audience: Audience, problem: String?
        var description: String { name }
    }

    static let names = (1...21).map { "t\($0)" }
    static let table: [Case] = [
        Case(name: "broadcast", audience: .broadcast, problem: nil),
        Case(name: "one tag", audience: .tag("username:alice"), problem: nil),
        Case(name: "20 tags with ||", audience: .expression(AzureHubProviderTests.or(Array(names.prefix(20))), source: "…"), problem: nil),
        Case(name: "21 tags with ||", audience: .expression(AzureHubProviderTests.or(names), source: "…"), problem: "has 21 tags; Azure Notification Hubs allows at most 20"),
        Case(name: "6 tags with &&", audience: .expression(AzureHubProviderTests.and(Array(names.prefix(6))), source: "…"), problem: nil),
        Case(name: "7 tags, one !", audience: .expression(.or(.not(.tag("a")), AzureHubProviderTests.or(Array(names.prefix(6)))), source: "…"),
             problem: "has 7 tags; Azure Notification Hubs allows at most 6 in an expression using && or !"),
        Case(name: "repeated tags count", audience: .expression(.and(.tag("a"), AzureHubProviderTests.or(Array(repeating: "a", count: 6))), source: "…"),
             problem: "has 7 tags"),
        Case(name: "bad character", audience: .tag("user name"), problem: "is not a hub tag"),
        Case(name: "too long", audience: .tag(String(repeating: "a", count: 121)), problem: "longer than 120"),
    ]

    @Test(arguments: table)
    func checks(_ c: Case) {
        let problem = AzureHubLimits.problem(c.audience)
        if let expected = c.problem {
            #expect(problem?.contains(expected) == true, "\(problem ?? "nil")")
        } else {
            #expect(problem == nil)
        }
    }
}
