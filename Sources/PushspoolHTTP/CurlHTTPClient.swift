import CCurl
import Dispatch
import Foundation
import Synchronization

/// The HTTP/1.1 transport (WNS, and servers that do not offer h2): libcurl's multi interface
/// driven by one poll thread, kept-alive connections up to `maxConnectionsPerHost`, TLS always
/// verified against the system roots plus the optional extra CA.
///
/// Threading: `execute` only queues the request and writes to an eventfd; the poll thread alone
/// touches curl handles (`curl_multi_poll` + `curl_multi_perform`). Finished requests are handed,
/// one batch per poll-loop turn, to a serial completion queue so slow completion work never
/// stalls the sockets.
public final class CurlHTTPClient: HTTPClient {
    private let core: CurlClientCore

    private static let globalInit: Void = { _ = curl_global_init(Int(CURL_GLOBAL_ALL)) }()

    /// Runtime libcurl version as 0xXXYYZZ (7.88.1 = 0x075801).
    public static var libcurlVersionNum: Int { Int(ccurl_version_info().pointee.version_num) }

    /// `gauge`: where it counts its connections (an HTTP/2 client falling back to this one shares its own).
    public convenience init(options: HTTPClientOptions, gauge: ConnectionGauge = ConnectionGauge()) throws {
        try self.init(options: options, trust: TrustStore(extraCAPEM: options.extraCAPEM), gauge: gauge)
    }

    init(options: HTTPClientOptions, trust: TrustStore, gauge: ConnectionGauge = ConnectionGauge()) throws {
        _ = Self.globalInit
        guard let first = CurlMulti(options: options, gauge: gauge) else {
            throw HTTPTransportError("curl_multi_init failed", isPermanent: true)
        }
        core = CurlClientCore(options: options, trust: trust, poll: try PollThread(label: "pushspool.curl"), gauge: gauge)
        // The thread keeps the loop and the core alive, never the client: dropping the client
        // without `shutdown()` still stops the thread (deinit below).
        let loop = CurlPollLoop(core: core, current: first)
        let thread = Thread { loop.run() }
        thread.name = "pushspool-curl"
        thread.start()
    }

    deinit { core.shutdown() }

    public func execute(_ request: HTTPRequest,
                        completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        let t = CurlTransfer(request: request, completion: completion)
        t.addressGuard = core.options.addressGuard
        t.plainHTTPToLoopback = core.options.plainHTTPToLoopback
        // Only the request that finds the queue empty wakes the poll thread: it takes the whole
        // queue at once, so later arrivals ride on the same wakeup (one syscall per batch).
        let (accepted, wasEmpty) = core.state.withLock { q in
            if q.stopping { return (false, false) }
            q.pending.append(t)
            return (true, q.pending.count == 1)
        }
        guard accepted else {
            completion(.failure(HTTPTransportError("HTTP client is shut down")))
            return
        }
        if wasEmpty { core.poll.wakeup.signal() }
    }

    public func condemnConnections() {
        core.state.withLock { $0.rotate = true }
        core.poll.wakeup.signal()
    }

    /// Idempotent. Fails queued and in-flight requests, stops the poll thread and waits for the
    /// completions already handed out (unless called from one of them).
    public func shutdown() { core.shutdown() }

    public var connections: HTTPConnectionCount { core.gauge.count }
}

/// What the client and its poll thread share.
final class CurlClientCore: @unchecked Sendable {
    struct Queue {
        var pending: [CurlTransfer] = []
        var stopping = false
        /// Retire the current connection before the next request (the service asked for it).
        var rotate = false
    }

    let options: HTTPClientOptions
    let trust: TrustStore
    let poll: PollThread
    let state = Mutex<Queue>(Queue())
    let gauge: ConnectionGauge

    init(options: HTTPClientOptions, trust: TrustStore, poll: PollThread, gauge: ConnectionGauge) {
        self.options = options
        self.trust = trust
        self.poll = poll
        self.gauge = gauge
    }

    func shutdown() {
        let first = state.withLock { q in
            defer { q.stopping = true }
            return !q.stopping
        }
        if first { poll.awaitStop() }
    }

    /// Runs completions on the completion queue, one hop per batch. Responses are assembled there
    /// (headers parsed), not on the poll thread, which has no time to spare.
    func hand(_ batch: [(CurlTransfer, Result<CurlTransfer.Answer, HTTPTransportError>)]) {
        poll.complete {
            for (t, result) in batch { t.completion(result.map(t.response)) }
        }
    }
}

/// How the engine makes clients for `ProviderContext.makeHTTPClient`: HTTP/2 on libnghttp2 unless
/// the service speaks only HTTP/1.1. A transport that cannot be built (an extra CA that holds no
/// certificate OpenSSL can read, no poll thread) is an error here, at start, where the caller can
/// report it as a configuration problem, never a client whose every request fails.
public enum HTTPClients {
    public static func make(_ options: HTTPClientOptions) throws(HTTPTransportError) -> any HTTPClient {
        try make(options, gauge: ConnectionGauge())
    }

    static func make(_ options: HTTPClientOptions, gauge: ConnectionGauge) throws(HTTPTransportError) -> any HTTPClient {
        switch options.versions {
        case .http1:
            // curl reads the extra CA only when it first connects: read it now, as the HTTP/2
            // transport does when it builds its TLS context.
            try TLSContext.checkCertificates(options.extraCAPEM)
            do {
                return try CurlHTTPClient(options: options, gauge: gauge)
            } catch {
                throw error as? HTTPTransportError ?? HTTPTransportError("\(error)", isPermanent: true)
            }
        case .http2Only, .http2Preferred:
            return try H2Client(options: options)
        }
    }
}
