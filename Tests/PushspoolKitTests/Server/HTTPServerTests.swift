import Dispatch
import Foundation
import PushspoolCore
@testable import PushspoolKit
@testable import PushspoolServer
import Testing

/// The embedded server on its own: answers given at once or later from another thread, bodies,
/// and the limits, each with a handler that says what it saw.
@Suite struct HTTPServerTests {
    static func serve(_ limits: HTTPServer.Limits = HTTPServer.Limits(), handler: @escaping HTTPServer.Handler) throws -> (HTTPServer, Int) {
        let server = HTTPServer(limits: limits, handler: handler)
        let bound = try server.start(ListenAddress(host: "127.0.0.1", port: 0))
        return (server, Int(bound.port))
    }

    @Test func answersAtOnceAndLaterOnOneKeepAliveConnection() throws {
        let (server, port) = try Self.serve { request, exchange in
            let echo = ServerResponse.json(200, .object([("method", .string(request.method)), ("path", .string(request.path)),
                                                         ("q", .string(request.query["q"] ?? "")), ("body", .string(String(decoding: request.body, as: UTF8.self))),
                                                         ("auth", .string(request.header("Authorization") ?? ""))]))
            if request.path == "/later" {
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { exchange.respond(echo) }
            } else {
                exchange.respond(echo)
            }
        }
        defer { server.stop() }
        let c = try RawHTTPClient(port: port)
        for path in ["/now", "/later", "/now", "/later"] {
            let a = try c.request("POST", "\(path)?q=a%20b", headers: [("Authorization", "Basic eA==")], body: "\"hi\"")
            #expect(a.status == 200)
            let j = a.json as? [String: String]
            #expect(j?["path"] == path && j?["q"] == "a b" && j?["body"] == "\"hi\"" && j?["auth"] == "Basic eA==" && j?["method"] == "POST")
        }
    }

    @Test func manyConcurrentSuspendedRequestsAllAnswered() throws {
        let (server, port) = try Self.serve { request, exchange in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.01) { exchange.respond(.text(200, request.path)) }
        }
        defer { server.stop() }
        let ok = LockedCounter()
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            guard let c = try? RawHTTPClient(port: port) else { return }
            for j in 0..<20 where (try? c.request("GET", "/\(i)-\(j)"))?.text == "/\(i)-\(j)" { ok.add() }
        }
        #expect(ok.value == 320)
    }

    @Test func limitsAnswerWithJSONErrors() throws {
        var limits = HTTPServer.Limits()
        limits.maxBody = 1000
        limits.maxURI = 200
        limits.maxHeaders = 600
        let (server, port) = try Self.serve(limits) { _, exchange in exchange.respond(.text(200, "ok")) }
        defer { server.stop() }
        // Declared too large: refused before the body is read.
        var a = try RawHTTPClient(port: port).request("POST", "/x", body: String(repeating: "a", count: 1001))
        #expect(a.status == 413 && (a.json as? [String: String])?["error"]?.contains("larger than 1000 bytes") == true)
        // Chunked, no length: refused once it passes the limit.
        let c = try RawHTTPClient(port: port)
        try c.send("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + "3e8\r\n" + String(repeating: "b", count: 1000) + "\r\n" + "1\r\nc\r\n0\r\n\r\n")
        a = try c.answer()
        #expect(a.status == 413)
        a = try RawHTTPClient(port: port).request("GET", "/" + String(repeating: "u", count: 300))
        #expect(a.status == 414 && a.header("Content-Type") == "application/json")
        a = try RawHTTPClient(port: port).request("GET", "/", headers: [("X-Big", String(repeating: "h", count: 700))])
        #expect(a.status == 431 && a.json != nil)
        // Within every limit.
        a = try RawHTTPClient(port: port).request("POST", "/x", body: String(repeating: "a", count: 1000))
        #expect(a.status == 200)
    }

    @Test func idleClientsAreCutOff() throws {
        var limits = HTTPServer.Limits()
        limits.timeoutSeconds = 1
        let (server, port) = try Self.serve(limits) { _, exchange in exchange.respond(.text(200, "ok")) }
        defer { server.stop() }
        let c = try RawHTTPClient(port: port, timeout: 5)
        try c.send("GET / HTTP/1.1\r\nHost: x\r\n")   // headers never finished
        let started = Date()
        #expect(c.isClosed())
        #expect(Date().timeIntervalSince(started) < 4)
    }
}

final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() { lock.lock(); n += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}
