import Dispatch
import Foundation
import PushspoolHTTP
import PushspoolCore
import Synchronization
@testable import PushspoolKit

/// An in-test `HTTPClient`: records every request and answers from a script, asynchronously on a
/// global queue like a real client's completion thread. Shared by the FCM and WNS suites.
final class OAuthScriptedClient: HTTPClient {
    typealias Script = @Sendable (HTTPRequest) -> Result<HTTPResponse, HTTPTransportError>
    private let script: Script
    private let log = Mutex<[HTTPRequest]>([])
    private let closed = Atomic<Bool>(false)

    init(_ script: @escaping Script) { self.script = script }

    var requests: [HTTPRequest] { log.withLock { $0 } }
    func requests(to urlPrefix: String) -> [HTTPRequest] { requests.filter { $0.url.hasPrefix(urlPrefix) } }
    var isShutDown: Bool { closed.load(ordering: .relaxed) }

    func execute(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        log.withLock { $0.append(request) }
        DispatchQueue.global().async { [script] in completion(script(request)) }
    }

    func condemnConnections() {}
    func shutdown() { closed.store(true, ordering: .relaxed) }
}

/// A clock tests move by hand.
final class OAuthTestClock: Sendable {
    private let value: Mutex<Date>
    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { value = Mutex(start) }
    var now: Date { value.withLock { $0 } }
    func advance(_ seconds: Double) { value.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

enum ProviderTestKit {
    static func json(_ text: String) -> [UInt8] { Array(text.utf8) }

    static func response(_ status: Int, _ body: String = "", headers: [String: String] = [:]) -> HTTPResponse {
        HTTPResponse(status: status, headers: headers, body: Array(body.utf8))
    }

    static func tokenResponse(_ token: String, expiresIn: Int = 3600) -> HTTPResponse {
        response(200, #"{"access_token":"\#(token)","token_type":"Bearer","expires_in":\#(expiresIn)}"#)
    }

    static func context(_ config: Config, client: OAuthScriptedClient, clock: OAuthTestClock) -> ProviderContext {
        ProviderContext(config: config, credentials: CredentialCache(directory: nil, clock: { clock.now }),
                        log: Log(minimum: .error), makeHTTPClient: { _ in client })
    }

    static func device(_ handle: String, platform: Platform, id: String = "dev-1") -> Device {
        Device(id: id, platform: platform, handle: handle, tags: ["username:alice"], updatedAt: Date(timeIntervalSince1970: 0))
    }

    /// Sends and waits for the one completion.
    static func send(_ provider: any PushProvider, _ request: SendRequest) async -> ProviderResult {
        await withCheckedContinuation { c in provider.send(request) { c.resume(returning: $0) } }
    }

    /// The decoded JSON of a JWT's header and claims.
    static func jwtParts(_ jwt: String) -> (header: JSONValue?, claims: JSONValue?, segments: Int) {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        func decode(_ s: String) -> JSONValue? {
            var b = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while b.count % 4 != 0 { b += "=" }
            guard let d = Data(base64Encoded: b) else { return nil }
            return try? JSONParser.parse(Array(d))
        }
        return (parts.count > 0 ? decode(parts[0]) : nil, parts.count > 1 ? decode(parts[1]) : nil, parts.count)
    }

    /// Form fields of an `application/x-www-form-urlencoded` body, decoded.
    static func form(_ body: [UInt8]) -> [String: String] {
        var out: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
            out[kv[0]] = kv.count > 1 ? kv[1] : ""
        }
        return out
    }

    static func header(_ r: HTTPRequest, _ name: String) -> String? {
        r.headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}
