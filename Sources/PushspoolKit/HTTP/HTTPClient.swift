/// One HTTP request. Bodies are bytes; header names are sent as given.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// Whole-request timeout in seconds.
    public var timeout: Double

    public init(method: String = "POST", url: String, headers: [(String, String)] = [],
                body: [UInt8] = [], timeout: Double = 30) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    /// Header names lowercased; the last value wins for repeated headers.
    public var headers: [String: String]
    public var body: [UInt8]
    /// 2 for HTTP/2, 1 for HTTP/1.x.
    public var httpVersion: Int

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = [], httpVersion: Int = 2) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
    }

    public subscript(header name: String) -> String? { headers[name.lowercased()] }
}

/// A request that got no HTTP response: connection refused or reset, TLS failure, GOAWAY before
/// the stream was answered, timeout. The server did not answer this request, so a retry is safe
/// from the client's side (the service's own idempotency is the provider's concern).
public struct HTTPTransportError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// TLS verification failures and malformed URLs are not worth retrying.
    public var isPermanent: Bool

    public init(_ message: String, isPermanent: Bool = false) {
        self.message = message
        self.isPermanent = isPermanent
    }

    public var description: String { message }
}

/// The transport seam under every HTTP provider and credential fetcher.
///
/// Contract: thread-safe; `execute` never blocks and calls `completion` exactly once, on any thread.
/// TLS is always verified. `shutdown` is idempotent and fails requests still queued.
public protocol HTTPClient: AnyObject, Sendable {
    func execute(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void)
    func shutdown()
}

extension HTTPClient {
    /// Blocking convenience for rare calls (OAuth token fetches, CLI checks). Never call it from
    /// the client's own completion thread.
    public func executeAndWait(_ request: HTTPRequest) -> Result<HTTPResponse, HTTPTransportError> {
        let box = ResultBox<Result<HTTPResponse, HTTPTransportError>>()
        execute(request) { box.set($0) }
        return box.wait()
    }
}
