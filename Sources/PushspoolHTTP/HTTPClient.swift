/// One header field of a request, as given (HTTP/2 lowercases the name on the way out).
public struct HTTPField: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// One HTTP request. Bodies are bytes; header names are sent as given.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: String
    /// The header fields, in order. Kept as structs rather than `(String, String)` tuples: an
    /// array of tuples is destroyed field by field through the runtime's generic tuple witness,
    /// about 600 instructions a field (a twentieth of an APNs push's), where a struct's own
    /// witness is a few.
    public var fields: [HTTPField]
    /// The header fields as (name, value) pairs.
    public var headers: [(String, String)] {
        get { fields.map { ($0.name, $0.value) } }
        set { fields = newValue.map { HTTPField($0.0, $0.1) } }
    }
    public var body: [UInt8]
    /// Whole-request timeout in seconds.
    public var timeout: Double
    /// Names (lowercase) of headers whose value is new on every request (a request id; `:path`
    /// when it names a device): HTTP/2
    /// sends them as literals never added to the HPACK table, so they do not push the constant
    /// headers (the bearer token) out of it and make every later request bigger.
    public var unindexedHeaders: [String]
    /// Names (lowercase) of the response's header fields the caller reads; nil: all of them. The
    /// HTTP/2 transport makes strings of these only (an answer's `date` and `server` are read by
    /// no provider, and made a hundred thousand times a minute).
    public var responseHeaders: [String]?

    public init(method: String = "POST", url: String, headers: [(String, String)] = [],
                body: [UInt8] = [], timeout: Double = 30, unindexedHeaders: [String] = [], responseHeaders: [String]? = nil) {
        self.init(method: method, url: url, fields: headers.map { HTTPField($0.0, $0.1) }, body: body, timeout: timeout,
                  unindexedHeaders: unindexedHeaders, responseHeaders: responseHeaders)
    }

    public init(method: String = "POST", url: String, fields: [HTTPField],
                body: [UInt8] = [], timeout: Double = 30, unindexedHeaders: [String] = [], responseHeaders: [String]? = nil) {
        self.method = method
        self.url = url
        self.fields = fields
        self.body = body
        self.timeout = timeout
        self.unindexedHeaders = unindexedHeaders
        self.responseHeaders = responseHeaders
    }
}

public struct HTTPResponse: Sendable {
    /// A response body is kept up to this many bytes and the rest read and dropped: every
    /// service's answer is far smaller (APNs ~100 bytes, FCM and OAuth ~2 KB, the hub's XML
    /// ~4 KB), and a hostile or broken endpoint must not fill the dispatcher's memory.
    public static let maxBodyBytes = 64 * 1024

    public var status: Int
    /// The header fields in the order received, names lowercased. A list, not a dictionary: an
    /// answer is read once or twice (`apns-id`, `retry-after`) and made by the hundred thousand.
    public var fields: [(name: String, value: String)]
    public var body: [UInt8]
    /// 2 for HTTP/2, 1 for HTTP/1.x.
    public var httpVersion: Int

    public init(status: Int, fields: [(name: String, value: String)], body: [UInt8] = [], httpVersion: Int = 2) {
        self.status = status
        self.fields = fields
        self.body = body
        self.httpVersion = httpVersion
    }

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = [], httpVersion: Int = 2) {
        self.init(status: status, fields: headers.map { ($0.key.lowercased(), $0.value) }, body: body, httpVersion: httpVersion)
    }

    /// Header names lowercased; the last value wins for repeated headers.
    public var headers: [String: String] {
        Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    /// The last value of the header `name` (any case).
    public subscript(header name: String) -> String? {
        // Asked in lowercase nearly always (once per answer): no new string then.
        let lowered = name.utf8.contains { $0 >= 0x41 && $0 <= 0x5A } ? name.lowercased() : name
        return fields.last { $0.name == lowered }?.value
    }
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

/// Which HTTP versions a client may speak.
public enum HTTPVersionPolicy: Sendable {
    /// HTTP/2 or nothing (APNs): a server that does not offer `h2` by ALPN fails the request.
    case http2Only
    /// HTTP/2 where the server offers it, HTTP/1.1 otherwise (FCM, the hub, OAuth token endpoints).
    case http2Preferred
    /// HTTP/1.1 (WNS).
    case http1
}

public struct HTTPClientOptions: Sendable {
    /// Extra trusted CA certificates (PEM), added to the system roots. Verification is always on.
    public var extraCAPEM: String?
    public var versions: HTTPVersionPolicy
    /// Our own cap on concurrent streams per connection; the server's SETTINGS may lower it.
    public var maxConcurrentStreams: Int = 1000
    /// Connections per origin at most. HTTP/2 opens more than one only as demand needs them: when
    /// every open connection is full at its stream limit (the server's or ours) and requests wait.
    public var maxConnectionsPerHost: Int = 8
    /// HTTP/2: an origin's extra connections close, one at a time, once demand has fitted in fewer
    /// for this long. Long enough that connections are not opened and closed in quick turns,
    /// which APNs may take for an attack.
    public var extraConnectionIdle: Double = 30
    /// A connection that has read nothing for this long while in use is sent a PING.
    public var pingInterval: Double = 30
    /// A PING unanswered for this long closes the connection as dead.
    public var pingTimeout: Double = 10
    /// TCP connect plus TLS handshake.
    public var connectTimeout: Double = 10
    /// Refuses non-public addresses where the socket is opened (URLs that came from devices).
    public var addressGuard: AddressGuard?
    /// HTTP/1.1 only: plain `http://` is allowed to a loopback address written in the URL
    /// (`127.x.y.z`, `[::1]`, `localhost`: a webhook receiver on the same host, tests); every
    /// other URL is https only, as for every provider.
    public var plainHTTPToLoopback = false

    public init(extraCAPEM: String? = nil, versions: HTTPVersionPolicy = .http2Preferred) {
        self.extraCAPEM = extraCAPEM
        self.versions = versions
    }
}

/// The transport seam under every HTTP provider and credential fetcher.
///
/// Contract: thread-safe; `execute` never blocks and calls `completion` exactly once, on any thread.
/// TLS is always verified. `shutdown` is idempotent and fails requests still queued.
public protocol HTTPClient: AnyObject, Sendable {
    func execute(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void)
    /// The service asked us to stop using the connections we have (APNs `Shutdown`,
    /// `IdleTimeout`): later requests go on fresh connections, requests in flight finish on the
    /// old ones, which then close.
    func condemnConnections()
    func shutdown()
    /// Connections open now and requests not answered yet (`status`, `/metrics`).
    var connections: HTTPConnectionCount { get }
}

extension HTTPClient {
    /// A client that does not count (a test's scripted one) shows none.
    public var connections: HTTPConnectionCount { HTTPConnectionCount(open: 0, inFlight: 0) }

    /// Blocking convenience for rare calls (OAuth token fetches, CLI checks). Never call it from
    /// the client's own completion thread.
    public func executeAndWait(_ request: HTTPRequest) -> Result<HTTPResponse, HTTPTransportError> {
        let box = ResultBox<Result<HTTPResponse, HTTPTransportError>>()
        execute(request) { box.set($0) }
        return box.wait()
    }
}
