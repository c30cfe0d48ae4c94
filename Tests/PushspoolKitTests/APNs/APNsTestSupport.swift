import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization
@testable import PushspoolKit

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let time: Mutex<Date>
    init(_ start: Date = Date()) { time = Mutex(start) }
    var now: Date { time.withLock { $0 } }
    func advance(_ seconds: Double) { time.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// An HTTP client that answers from a script and records what it was asked.
final class ScriptedHTTPClient: HTTPClient {
    let requests = Mutex<[HTTPRequest]>([])
    let answer: @Sendable (HTTPRequest) -> Result<HTTPResponse, HTTPTransportError>
    init(_ answer: @escaping @Sendable (HTTPRequest) -> Result<HTTPResponse, HTTPTransportError>) { self.answer = answer }
    func execute(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        requests.withLock { $0.append(request) }
        completion(answer(request))
    }
    /// Times the provider asked for fresh connections.
    let condemned = Mutex(0)
    func condemnConnections() { condemned.withLock { $0 += 1 } }
    func shutdown() {}
}

enum APNsFixtures {
    static let teamID = "TEAMID1234"
    static let keyID = "TESTKEY123"
    static var keyPEM: String { (try? String(contentsOf: Paths.fixture("AuthKey_TESTKEY123.p8"), encoding: .utf8)) ?? "" }
    static var key: SigningKey { try! SigningKey(pem: keyPEM) }

    static func config(endpoint: String? = nil) -> APNsConfig {
        APNsConfig(teamID: teamID, keyID: keyID, keyFile: Paths.fixture("AuthKey_TESTKEY123.p8").path,
                   topic: "com.example.app", environment: "production", endpoint: endpoint)
    }

    static func context(cacheDir: URL? = nil, clock: ManualClock? = nil, caFile: Bool = true) -> ProviderContext {
        let config = Config()
        let ca = caFile ? try? String(contentsOf: Paths.fixture("ca.pem"), encoding: .utf8) : nil
        let now: @Sendable () -> Date
        if let clock { now = { clock.now } } else { now = { Date() } }
        return ProviderContext(config: config, credentials: CredentialCache(directory: cacheDir, clock: now),
                               log: Log(minimum: .error), makeHTTPClient: { options in
                                   // As the runtime does with `tls.ca_file`.
                                   var options = options
                                   if options.extraCAPEM == nil { options.extraCAPEM = ca }
                                   return try HTTPClients.make(options)
                               })
    }

    static func device(_ token: String, id: String? = nil) -> Device {
        Device(id: id ?? "dev-" + token.prefix(8), platform: .apns, handle: token, tags: ["t"], updatedAt: Date())
    }

    static func send(_ provider: any PushProvider, to device: Device, jobID: String = "job1",
                     notification: APNsNotification = APNsNotification(payload: Array(#"{"aps":{"alert":"From bob: hi"}}"#.utf8))) -> ProviderResult {
        let box = Mutex<ProviderResult?>(nil)
        let done = DispatchSemaphore(value: 0)
        provider.send(SendRequest(jobID: jobID, platform: .apns, recipient: .device(device),
                                  notification: .apns(notification))) { r in
            box.withLock { $0 = r }
            done.signal()
        }
        done.wait()
        return box.withLock { $0! }
    }

    /// The JSON objects inside a compact JWS (header, claims).
    static func decodeJWT(_ jwt: String) -> (header: [String: Any], claims: [String: Any])? {
        let parts = jwt.split(separator: ".").map(String.init)
        guard parts.count == 3 else { return nil }
        func obj(_ s: String) -> [String: Any]? {
            var b = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while b.count % 4 != 0 { b += "=" }
            guard let d = Data(base64Encoded: b) else { return nil }
            return try? JSONSerialization.jsonObject(with: d) as? [String: Any]
        }
        guard let h = obj(parts[0]), let c = obj(parts[1]) else { return nil }
        return (h, c)
    }
}
