import PushspoolKit
import CMHD
import Dispatch
import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The embedded HTTP/1.1 server of `pushspool serve`: libmicrohttpd (keep-alive, a pool of
/// polling threads on epoll, TLS through GnuTLS) parses and writes HTTP; this class turns each
/// request into an `ServerRequest` for `handler` and its answer into the library's response.
///
/// A handler answers through its `HTTPExchange`, at once or later from any thread. An answer
/// that is not there when the handler returns suspends the connection (no polling thread is
/// held while a job file is fsynced or the registry is written) and resumes it when it comes.
/// Limits: the request line and headers (`414`/`431`), the body (`413`, before it is read when
/// `Content-Length` says so), idle and slow clients (`timeoutSeconds`: the library's
/// inactivity timeout, and `SlowClientGuard` for a request that trickles in), open connections
/// (`maxConnections`, `maxConnectionsPerAddress`), framing that could be read two ways
/// (`RequestFraming`: `400`, connection closed), and the time a route may take
/// (`requestTimeoutSeconds`: then `503` with `Retry-After`, and the route's late answer is dropped).
/// The path reaches the handler as sent, for `RequestPath` to decode; query keys and values
/// arrive decoded.
///
/// Stopping (`stop(grace:)`): no new connection is accepted and no new request is handed to a
/// route; requests in progress get `grace` seconds to be answered, the rest `503`; only then,
/// with no connection suspended, is the library stopped.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked: `daemon` and `slowClients` are written once in `start` (before any callback)
    // and `daemon` in `stop`; the rest is immutable, atomic or guarded by `inFlight` and `pending`.
    public struct Limits: Sendable {
        public var maxBody = 64 << 10
        /// Paths (as sent, without the query) that take larger bodies than `maxBody`: a batch of
        /// 1,000 events to `/v1/events` is about 100 KiB. Only these paths; every other keeps `maxBody`.
        public var largerBodies: [String: Int] = [:]

        /// The body limit of a request to `url`.
        func maxBody(for url: String) -> Int {
            largerBodies.isEmpty ? maxBody : largerBodies[String(url.prefix { $0 != "?" })] ?? maxBody
        }
        /// The request target (path and query). Longer ones get `414` from here; past the
        /// library's own buffer (`memory`), the library answers `414`/`431` itself.
        public var maxURI = 4 << 10
        /// All request headers together (nginx's default budget is the same 8 KiB).
        public var maxHeaders = 8 << 10
        /// Per connection: the library's buffer for the request line, headers and body chunks.
        /// The library touches all of it, so it is what an open connection costs (16 MB for
        /// 1,000 connections at 16 KiB; 48 KiB made it 48 MB).
        public var memory = 16 << 10
        public var timeoutSeconds = 30
        public var maxConnections = 4096
        /// Open connections from one client address at most (the library refuses more at once).
        public var maxConnectionsPerAddress = 64
        public var threads = max(2, ProcessInfo.processInfo.activeProcessorCount)
        /// A request its route has not answered within this long gets `503` with `Retry-After`.
        public var requestTimeoutSeconds: Double = 10
        public init() {}
    }

    /// One finished request, for the access log and the metrics (never a credential, body or query).
    public struct Completion: Sendable {
        public var method: String
        public var route: String
        public var status: Int
        public var seconds: Double
        public var principal: String?
        /// False when the client went away or the connection failed before the answer was sent.
        public var completed: Bool
    }

    public typealias Handler = @Sendable (ServerRequest, HTTPExchange) -> Void

    public let limits: Limits
    private let handler: Handler
    private let completed: @Sendable (Completion) -> Void
    private let tls: (key: String, cert: String)?
    private var daemon: OpaquePointer?
    private var listenFD: Int32 = -1
    private var tlsStrings: (UnsafeMutablePointer<CChar>, UnsafeMutablePointer<CChar>)?
    /// Requests whose answer is being worked out: `stop` waits for them.
    private let inFlight = DispatchGroup()
    /// Cuts off connections whose request does not arrive whole within `timeoutSeconds`.
    private var slowClients: SlowClientGuard?
    /// Suspended requests and their deadlines.
    fileprivate let pending: PendingAnswers
    /// Set when `stop` begins: a request that comes in after it is answered `503` at once.
    private let stopping = Atomic<Bool>(false)

    /// `tls`: PEM key and certificate chain, for HTTPS.
    public init(limits: Limits = Limits(), tls: (key: String, cert: String)? = nil,
                handler: @escaping Handler, completed: @escaping @Sendable (Completion) -> Void = { _ in }) {
        self.limits = limits
        self.tls = tls
        self.handler = handler
        self.completed = completed
        pending = PendingAnswers(timeoutSeconds: limits.requestTimeoutSeconds) { exchange in
            exchange.respond(.error(503, "the request did not finish within \(Self.seconds(limits.requestTimeoutSeconds)); try again",
                                    headers: [("Retry-After", "5")]))
        }
    }

    deinit { stop() }

    /// Binds `address` and starts serving; returns the address bound (with the port chosen when
    /// `address` asked for port 0).
    @discardableResult
    public func start(_ address: ListenAddress) throws(ServerError) -> ListenAddress {
        let (fd, bound) = try address.listeningSocket()
        listenFD = fd
        var key: UnsafeMutablePointer<CChar>?, cert: UnsafeMutablePointer<CChar>?
        if let tls {
            key = strdup(tls.key)
            cert = strdup(tls.cert)
            tlsStrings = (key!, cert!)
        }
        let flags = MHD_USE_AUTO_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
        let me = Unmanaged.passUnretained(self).toOpaque()
        let guardian = SlowClientGuard(limitSeconds: Double(limits.timeoutSeconds))
        slowClients = guardian
        let extra = HTTPServerCallbacks.options(limits, guardian: guardian)
        daemon = cmhd_start(flags, fd, UInt32(limits.threads), UInt32(limits.maxConnections), UInt32(limits.timeoutSeconds),
                            limits.memory, HTTPServerCallbacks.access, me, HTTPServerCallbacks.completed, me, key, cert, extra)
        guard daemon != nil else {
            slowClients = nil
            close(fd)
            listenFD = -1
            throw ServerError("cannot start the HTTP server on \(bound)\(tls != nil ? " (is the TLS key or certificate valid PEM?)" : "")")
        }
        return bound
    }

    /// Stops accepting connections and requests, waits up to `grace` seconds for the answers
    /// being worked out, answers the rest `503` with `Retry-After`, then closes every connection.
    /// A route that answers later is ignored (its exchange stays valid). Idempotent.
    public func stop(grace: Double = 10) {
        guard let daemon else { return }
        stopping.store(true, ordering: .sequentiallyConsistent)
        _ = MHD_quiesce_daemon(daemon)
        _ = inFlight.wait(timeout: .now() + grace)
        // The library panics when stopped with a connection still suspended: every request
        // still waiting is answered (which resumes it), and none is suspended after this.
        for exchange in pending.close() {
            exchange.respond(Self.stoppingAnswer)
        }
        // Requests that were between their route and their suspension answer themselves now.
        _ = inFlight.wait(timeout: .now() + 2)
        MHD_stop_daemon(daemon)
        self.daemon = nil
        slowClients?.stop()
        if listenFD >= 0 { close(listenFD) }
        listenFD = -1
        if let (key, cert) = tlsStrings {
            // The key's bytes do not linger in freed memory.
            memset(key, 0, strlen(key))
            free(key)
            free(cert)
            tlsStrings = nil
        }
    }

    // MARK: - Called by the library's threads (HTTPServerCallbacks)

    fileprivate func begin(_ connection: OpaquePointer, url: String, method: String) -> HTTPExchange {
        let exchange = HTTPExchange(server: self, connection: connection, method: method, url: url)
        // The headers are read from the library once: the framing check, the size limit and the
        // request the route gets all use this copy.
        let lines = headerLines(connection)
        exchange.headerLines = lines
        // What can be refused before the body is read.
        if let problem = RequestFraming.problem(lines) {
            exchange.early = .error(400, problem, headers: [("Connection", "close")])
        } else if url.utf8.count > limits.maxURI {
            exchange.early = .error(414, "the request target is longer than \(limits.maxURI) bytes")
        } else if let length = cmhd_header(connection, "Content-Length").map({ String(cString: $0) }),
                  let n = Int(length), n > exchange.maxBody {
            exchange.early = .error(413, "the body is larger than \(exchange.maxBody) bytes")
        } else if lines.reduce(0, { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }) > limits.maxHeaders {
            exchange.early = .error(431, "the request headers are larger than \(limits.maxHeaders) bytes")
        }
        return exchange
    }

    private func headerLines(_ connection: OpaquePointer) -> [(name: String, value: String)] {
        var lines: [(name: String, value: String)] = []
        withUnsafeMutablePointer(to: &lines) { p in
            _ = MHD_get_connection_values(connection, MHD_ValueKind.HEADER_KIND, { cls, _, key, value in
                guard let key else { return MHD_Result.YES }
                cls!.assumingMemoryBound(to: [(name: String, value: String)].self).pointee
                    .append((String(cString: key), value.map { String(cString: $0) } ?? ""))
                return MHD_Result.YES
            }, p)
        }
        return lines
    }

    fileprivate func dispatch(_ exchange: HTTPExchange, _ connection: OpaquePointer) {
        slowClients?.arrived(connection)
        inFlight.enter()
        exchange.leaveOnAnswer = true
        if stopping.load(ordering: .sequentiallyConsistent) {
            exchange.route = "stopping"
            return exchange.respond(Self.stoppingAnswer)
        }
        handler(exchange.request(connection), exchange)
    }

    /// For requests the server will not finish because it is stopping; the client retries
    /// elsewhere or later (the connection closes after it).
    static let stoppingAnswer = ServerResponse.error(503, "the server is stopping; try again",
                                                     headers: [("Retry-After", "5"), ("Connection", "close")])

    static func seconds(_ s: Double) -> String { s == s.rounded() ? "\(Int(s)) s" : "\(s) s" }

    fileprivate func answered() { inFlight.leave() }

    fileprivate func slowClientsArrived(_ connection: OpaquePointer) { slowClients?.arrived(connection) }

    fileprivate func finished(_ exchange: HTTPExchange, connection: OpaquePointer?, completed ok: Bool) {
        if let connection { slowClients?.waiting(connection) }
        completed(Completion(method: exchange.method, route: exchange.route ?? "other", status: exchange.status,
                             seconds: Double(DispatchTime.now().uptimeNanoseconds - exchange.started) / 1e9,
                             principal: exchange.principal, completed: ok))
    }
}

/// One request on its way through the server: the body as it arrives, then the answer, which the
/// route gives from any thread (`respond`), exactly once.
public final class HTTPExchange: @unchecked Sendable {
    // @unchecked: the library calls the access handler for one connection from one thread at a
    // time, so the body and `early` need no lock; the answer crosses threads under `state`.
    fileprivate enum State {
        case working
        case suspended
        case answered(ServerResponse)
        case sent
    }

    /// Strong: a route may answer after the server stopped (the answer is then dropped here).
    fileprivate let server: HTTPServer
    fileprivate let connection: OpaquePointer
    fileprivate let method: String
    fileprivate let url: String
    fileprivate let started = DispatchTime.now().uptimeNanoseconds
    fileprivate var body: [UInt8] = []
    fileprivate var bodyTooLarge = false
    /// This request's body limit (`Limits.maxBody(for:)`).
    fileprivate let maxBody: Int
    fileprivate var early: ServerResponse?
    /// The request headers as the library parsed them, read once in `begin`.
    fileprivate var headerLines: [(name: String, value: String)] = []
    /// True once the handler has it: `stop` waits for its answer.
    fileprivate var leaveOnAnswer = false
    /// Its entry among the server's pending answers while suspended (0: none).
    private var pendingID: UInt64 = 0
    fileprivate var status = 0
    private let state = Mutex(State.working)
    /// Set by the route for the access log and metrics: the route's pattern (`PUT /api/register/{id}`)
    /// and who asked. Written before `respond`, read after the answer is sent.
    public var route: String?
    public var principal: String?
    /// Headers added to whatever answer this request gets (the dashboard's security headers on
    /// every `/ui/` answer, refusals included). Set before `respond`.
    public var addedHeaders: [(String, String)] = []

    fileprivate init(server: HTTPServer, connection: OpaquePointer, method: String, url: String) {
        self.server = server
        self.connection = connection
        self.method = method
        self.url = url
        maxBody = server.limits.maxBody(for: url)
    }

    /// Gives the answer. The first call counts; later ones are ignored (also those that come
    /// after the deadline's `503` or after the server stopped).
    public func respond(_ response: ServerResponse) {
        let resume = state.withLock { s -> UInt64? in
            switch s {
            case .working: s = .answered(response); return 0
            case .suspended:
                s = .answered(response)
                // Under the lock: the server cannot have stopped the library before this resume
                // (it answers every pending request first, through here).
                MHD_resume_connection(connection)
                return pendingID
            case .answered, .sent: return nil
            }
        }
        guard let resume else { return }
        if resume != 0 { server.pending.remove(resume) }
        if leaveOnAnswer { server.answered() }
    }

    /// True once an answer was given: work for this request that has not begun yet need not begin.
    public var isAnswered: Bool {
        state.withLock { s in
            if case .working = s { return false }
            if case .suspended = s { return false }
            return true
        }
    }

    fileprivate func request(_ connection: OpaquePointer) -> ServerRequest {
        var headers: [String: String] = [:]
        headers.reserveCapacity(headerLines.count)
        for line in headerLines { headers[line.name.lowercased()] = line.value }
        var query: [String: String] = [:]
        withUnsafeMutablePointer(to: &query) { p in
            _ = MHD_get_connection_values(connection, MHD_ValueKind.GET_ARGUMENT_KIND, { cls, _, key, value in
                guard let key else { return MHD_Result.YES }
                // The library leaves these as sent (see `HTTPServerCallbacks.options`).
                cls!.assumingMemoryBound(to: [String: String].self).pointee[RequestPath.decodedLeniently(String(cString: key))] =
                    value.map { RequestPath.decodedLeniently(String(cString: $0)) } ?? ""
                return MHD_Result.YES
            }, p)
        }
        var address = [CChar](repeating: 0, count: 64)
        cmhd_client_address(connection, &address, address.count)
        let path = url.firstIndex(of: "?").map { String(url[..<$0]) } ?? url
        return ServerRequest(method: method, path: path, query: query, headers: headers, body: body,
                           remote: String(decoding: address.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self))
    }

    /// After the handler returned (or the connection was resumed): the answer if there is one,
    /// else the connection is suspended until `respond`.
    fileprivate func take(_ connection: OpaquePointer) -> ServerResponse? {
        state.withLock { s -> ServerResponse? in
            switch s {
            case .answered(let r):
                s = .sent
                return r
            case .working:
                // The server is stopping: answered now rather than suspended.
                guard let id = server.pending.add(self) else {
                    s = .sent
                    if leaveOnAnswer { server.answered() }
                    return HTTPServer.stoppingAnswer
                }
                pendingID = id
                // Under the lock: a `respond` from another thread waits until the suspension is
                // in place, so its resume is never lost.
                MHD_suspend_connection(connection)
                s = .suspended
                return nil
            case .suspended, .sent:
                return nil
            }
        }
    }

    fileprivate func queue(_ response: ServerResponse, on connection: OpaquePointer) -> MHD_Result {
        status = response.status
        let made: OpaquePointer?
        switch response.body {
        case .bytes(let bytes):
            made = bytes.withUnsafeBytes { raw in
                MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), MHD_ResponseMemoryMode.RESPMEM_MUST_COPY)
            }
        case .file(let fd, let offset, let length):
            made = MHD_create_response_from_fd_at_offset64(length, fd, offset)
        case .pipe(let fd):
            made = MHD_create_response_from_pipe(fd)
        }
        guard let made else {
            // The descriptor was handed over for the library to close, and it never took it: closed
            // here (a pipe's writer then gets EPIPE instead of blocking for ever on a full pipe).
            switch response.body {
            case .file(let fd, _, _), .pipe(let fd): close(fd)
            case .bytes: break
            }
            return MHD_Result.NO
        }
        defer { MHD_destroy_response(made) }
        for (name, value) in response.headers + addedHeaders { _ = MHD_add_response_header(made, name, value) }
        return MHD_queue_response(connection, UInt32(response.status), made)
    }
}

/// The library's C callbacks, defined away from any actor (a closure written in `main.swift` would
/// be main-actor isolated and trap when a server thread calls it). They reach the server and the
/// exchange through the library's `cls` pointers.
enum HTTPServerCallbacks {
    static let access: MHD_AccessHandlerCallback = { cls, connection, url, method, _, upload, uploadSize, context in
        guard let cls, let connection, let context, let uploadSize else { return MHD_Result.NO }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        guard let existing = context.pointee else {
            // First call: the request line and headers are in.
            let exchange = server.begin(connection, url: url.map { String(cString: $0) } ?? "/",
                                        method: method.map { String(cString: $0) } ?? "GET")
            context.pointee = Unmanaged.passRetained(exchange).toOpaque()
            if let early = exchange.early {
                // Answered before the body: the library closes the connection after it.
                exchange.route = "refused"
                server.slowClientsArrived(connection)
                return exchange.queue(early, on: connection)
            }
            return MHD_Result.YES
        }
        let exchange = Unmanaged<HTTPExchange>.fromOpaque(existing).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            let n = uploadSize.pointee
            if exchange.early == nil, !exchange.bodyTooLarge, let upload {
                if exchange.body.count + n > exchange.maxBody {
                    exchange.bodyTooLarge = true
                    exchange.body = []
                } else {
                    exchange.body.append(contentsOf: UnsafeRawBufferPointer(start: upload, count: n))
                }
            }
            uploadSize.pointee = 0
            return MHD_Result.YES
        }
        if exchange.early != nil { return MHD_Result.YES }
        if exchange.bodyTooLarge {
            exchange.route = "refused"
            exchange.early = .error(413, "the body is larger than \(exchange.maxBody) bytes")
            return exchange.queue(exchange.early!, on: connection)
        }
        if !exchange.leaveOnAnswer { server.dispatch(exchange, connection) }
        guard let response = exchange.take(connection) else { return MHD_Result.YES }
        return exchange.queue(response, on: connection)
    }

    static let completed: MHD_RequestCompletedCallback = { cls, connection, context, termination in
        guard let cls, let context, let existing = context.pointee else { return }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        let exchange = Unmanaged<HTTPExchange>.fromOpaque(existing).takeRetainedValue()
        context.pointee = nil
        server.finished(exchange, connection: connection, completed: termination == MHD_RequestTerminationCode.REQUEST_TERMINATED_COMPLETED_OK)
    }
}

public struct ServerError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension HTTPServerCallbacks {
    /// The daemon's options beyond those `cmhd_start` names (an array ended by `MHD_OPTION_END`):
    /// - at most `maxConnectionsPerAddress` connections from one address;
    /// - the library's client discipline where the installed version has one that refuses bare
    ///   LF line ends (see `cmhd_client_discipline`); `Host` and the framing headers are checked
    ///   by `RequestFraming` either way, so that the answer is JSON;
    /// - the path and query left as sent, so that each path segment is decoded once and whole
    ///   by `RequestPath` (the library's own decoding stops a C string at `%00`);
    /// - connection notices for `guardian`.
    static func options(_ limits: HTTPServer.Limits, guardian: SlowClientGuard) -> [MHD_OptionItem] {
        let unescape: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutablePointer<CChar>?) -> Int = { _, _, s in
            s.map { strlen($0) } ?? 0
        }
        let notify: MHD_NotifyConnectionCallback = { cls, connection, _, code in
            guard let cls, let connection else { return }
            let guardian = Unmanaged<SlowClientGuard>.fromOpaque(cls).takeUnretainedValue()
            if code == MHD_ConnectionNotificationCode.CONNECTION_NOTIFY_STARTED {
                guardian.opened(connection, fd: cmhd_connection_fd(connection))
            } else {
                guardian.closed(connection)
            }
        }
        let me = Unmanaged.passUnretained(guardian).toOpaque()
        return [
            MHD_OptionItem(option: MHD_OPTION.PER_IP_CONNECTION_LIMIT, value: limits.maxConnectionsPerAddress, ptr_value: nil),
            cmhd_client_discipline(),
            MHD_OptionItem(option: MHD_OPTION.UNESCAPE_CALLBACK, value: unsafeBitCast(unescape, to: Int.self), ptr_value: nil),
            MHD_OptionItem(option: MHD_OPTION.NOTIFY_CONNECTION, value: unsafeBitCast(notify, to: Int.self), ptr_value: me),
            MHD_OptionItem(option: MHD_OPTION.END, value: 0, ptr_value: nil),
        ]
    }
}
