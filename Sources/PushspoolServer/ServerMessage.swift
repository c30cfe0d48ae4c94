import PushspoolKit
import Foundation
import PushspoolCore

/// One request as the front door's routes see it: read whole (bodies are small: at most
/// `HTTPServer.Limits.maxBody`), headers by lowercase name, the query already percent-decoded.
public struct ServerRequest: Sendable {
    public var method: String
    /// The path without the query string, percent-decoded by the server library.
    public var path: String
    public var query: [String: String]
    /// Lowercase name → value (a repeated header keeps its last value).
    public var headers: [String: String]
    public var body: [UInt8]
    /// The connecting address (the proxy's, behind a reverse proxy).
    public var remote: String

    public init(method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
                body: [UInt8] = [], remote: String = "127.0.0.1") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remote = remote
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// An answer. Bodies are bytes, or a file or pipe streamed by the server library without copying
/// it into memory (a result log, a device listing of a million lines).
public struct ServerResponse: Sendable {
    public enum Body: Sendable {
        case bytes([UInt8])
        /// `length` bytes of the open file `fd` from `offset`; the server closes `fd`.
        case file(fd: Int32, offset: UInt64, length: UInt64)
        /// Everything written to the pipe's other end until it is closed; the server closes `fd`.
        case pipe(fd: Int32)
    }

    public var status: Int
    public var headers: [(String, String)]
    public var body: Body

    public init(status: Int, headers: [(String, String)] = [], body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON answer (`application/json`).
    public static func json(_ status: Int, _ value: JSONValue, headers: [(String, String)] = []) -> ServerResponse {
        ServerResponse(status: status, headers: [("Content-Type", "application/json")] + headers,
                     body: .bytes(value.encoded()))
    }

    /// Every error body: `{"error": "<one sentence naming the field>"}`.
    public static func error(_ status: Int, _ message: String, headers: [(String, String)] = []) -> ServerResponse {
        json(status, .object([("error", .string(message))]), headers: headers)
    }

    public static func text(_ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8") -> ServerResponse {
        ServerResponse(status: status, headers: [("Content-Type", contentType)], body: .bytes(Array(text.utf8)))
    }
}

/// A request refused while it was being read: the answer to give.
public struct Refusal: Error, Sendable {
    public var response: ServerResponse
    public init(_ response: ServerResponse) { self.response = response }
}
