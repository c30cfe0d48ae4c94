import CCurl
import Dispatch
import Foundation
import Synchronization

/// The HTTP transport under every provider: libcurl's multi interface driven by one poll thread,
/// HTTP/2 multiplexing many streams on one connection (ALPN falls back to HTTP/1.1 where a
/// service only speaks that), TLS always verified against the system roots plus the optional
/// extra CA.
///
/// Threading: `execute` only queues the request and writes to an eventfd; the poll thread alone
/// touches curl handles (`curl_multi_poll` + `curl_multi_perform`). Finished requests are handed,
/// one batch per poll-loop turn, to a serial completion queue so slow completion work never
/// stalls the sockets.
public final class CurlHTTPClient: HTTPClient {
    private let options: HTTPClientOptions
    private let trust: TrustStore
    private let wakeup: CurlWakeup
    private let state = Mutex<Queue>(Queue())
    private let completions = DispatchQueue(label: "pushspool.curl.completions")
    private let onCompletionQueue = DispatchSpecificKey<Bool>()
    private let loopExited = DispatchSemaphore(value: 0)
    private let loopThreadID = Mutex<pthread_t?>(nil)

    private struct Queue {
        var pending: [CurlTransfer] = []
        var stopping = false
        /// Retire the current connection before the next request (the service asked for it).
        var rotate = false
        var stopped = false
    }

    private static let globalInit: Void = { _ = curl_global_init(Int(CURL_GLOBAL_ALL)) }()

    /// Runtime libcurl version as 0xXXYYZZ (7.88.1 = 0x075801).
    public static var libcurlVersionNum: Int { Int(ccurl_version_info().pointee.version_num) }

    public convenience init(options: HTTPClientOptions) throws {
        try self.init(options: options, trust: TrustStore(extraCAPEM: options.extraCAPEM))
    }

    init(options: HTTPClientOptions, trust: TrustStore) throws {
        _ = Self.globalInit
        self.options = options
        self.trust = trust
        wakeup = try CurlWakeup()
        guard let first = CurlMulti(options: options) else {
            throw HTTPTransportError("curl_multi_init failed", isPermanent: true)
        }
        completions.setSpecific(key: onCompletionQueue, value: true)
        let loop = PollLoop(client: self, current: first)
        let thread = Thread { loop.run() }
        thread.name = "pushspool-curl"
        thread.start()
    }

    deinit { shutdown() }

    public func execute(_ request: HTTPRequest,
                        completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        let t = CurlTransfer(request: request, completion: completion)
        // Only the request that finds the queue empty wakes the poll thread: it takes the whole
        // queue at once, so later arrivals ride on the same wakeup (one syscall per batch).
        let (accepted, wasEmpty) = state.withLock { q in
            if q.stopping { return (false, false) }
            q.pending.append(t)
            return (true, q.pending.count == 1)
        }
        guard accepted else {
            completion(.failure(HTTPTransportError("HTTP client is shut down")))
            return
        }
        if wasEmpty { wakeup.signal() }
    }

    /// Sends later requests on a fresh connection; requests in flight finish on the old one.
    /// For answers that condemn the connection (APNs `Shutdown`, `IdleTimeout`).
    public func rotateConnection() {
        state.withLock { $0.rotate = true }
        wakeup.signal()
    }

    /// Idempotent. Fails queued and in-flight requests, stops the poll thread and waits for the
    /// completions already handed out (unless called from one of them).
    public func shutdown() {
        let first = state.withLock { q in
            defer { q.stopping = true }
            return !q.stopping
        }
        guard first else { return }
        wakeup.signal()
        let onLoop = loopThreadID.withLock { id in id.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        if !onLoop { loopExited.wait() }
        if DispatchQueue.getSpecific(key: onCompletionQueue) != true { completions.sync {} }
    }

    // MARK: poll loop (runs on the client's own thread)

    /// State owned by the poll thread alone.
    private final class PollLoop: @unchecked Sendable {
        unowned let client: CurlHTTPClient
        var current: CurlMulti
        var draining: [CurlMulti] = []
        /// Finished easy handles for reuse; about one per stream in flight.
        var easies: CurlEasyPool

        init(client: CurlHTTPClient, current: CurlMulti) {
            self.client = client
            self.current = current
            easies = CurlEasyPool(capacity: min(4096, max(64, client.options.maxConcurrentStreams)))
        }

        func run() {
            client.loopThreadID.withLock { $0 = pthread_self() }
            var wait = [curl_waitfd]()
            while true {
                let (batch, stopping, rotate) = client.state.withLock { q in
                    defer {
                        q.pending.removeAll(keepingCapacity: true)
                        q.rotate = false
                    }
                    return (q.pending, q.stopping, q.rotate)
                }
                if stopping {
                    stop(unstarted: batch)
                    return
                }
                if rotate, current.added > 0, let fresh = CurlMulti(options: client.options) {
                    draining.append(current)
                    current = fresh
                }
                for t in batch { start(t) }
                current.perform()
                for m in draining { m.perform() }
                finishDone()

                // Sleep until a socket of any pool, a curl timer or a new request needs us.
                wait.removeAll(keepingCapacity: true)
                wait.append(curl_waitfd(fd: client.wakeup.readFD, events: Int16(CURL_WAIT_POLLIN), revents: 0))
                var timeout = 1000
                for m in draining {
                    wait += m.waitFDs()
                    let ms = m.timeoutMs()
                    if ms >= 0 { timeout = min(timeout, ms) }
                }
                wait.withUnsafeMutableBufferPointer { w in
                    _ = curl_multi_poll(current.handle, w.baseAddress, UInt32(w.count), Int32(timeout), nil)
                }
                if wait[0].revents != 0 { client.wakeup.drain() }
            }
        }

        private func start(_ t: CurlTransfer) {
            if let limit = client.options.maxStreamsPerConnection, current.added >= limit,
               let fresh = CurlMulti(options: client.options) {
                draining.append(current)
                current = fresh
            }
            guard let easy = easies.take(trust: client.trust) else {
                client.hand([(t, .failure(HTTPTransportError("curl_easy_init failed")))])
                return
            }
            if let error = t.attach(easy) {
                easies.give(easy)
                client.hand([(t, .failure(error))])
            } else if !current.add(t) {
                t.easy = nil
                easies.give(easy)
                client.hand([(t, .failure(HTTPTransportError("curl_multi_add_handle failed")))])
            }
        }

        private func finishDone() {
            var done: [(CurlTransfer, CURLcode)] = []
            current.collectDone(into: &done)
            for m in draining { m.collectDone(into: &done) }
            // A retired pool with nothing in flight is closed (its connection goes with it).
            draining.removeAll { $0.inFlight == 0 }
            guard !done.isEmpty else { return }
            let requireH2 = client.options.requireHTTP2
            let results = done.map { ($0.0, $0.0.finish(code: $0.1, requireHTTP2: requireH2)) }
            for (t, _) in done {
                if let easy = t.easy { easies.give(easy) }
                t.easy = nil
            }
            client.hand(results)
        }

        private func stop(unstarted: [CurlTransfer]) {
            var all = unstarted
            for m in [current] + draining { all += m.removeAll() }
            draining.removeAll()
            let error = HTTPTransportError("HTTP client shut down before the response")
            client.hand(all.map { ($0, .failure(error)) })
            client.loopExited.signal()
        }
    }

    /// Runs completions on the completion queue, one hop per batch.
    private func hand(_ batch: [(CurlTransfer, Result<HTTPResponse, HTTPTransportError>)]) {
        let items = batch.map { (t, r) in (t.completion, r) }
        completions.async {
            for (completion, result) in items { completion(result) }
        }
    }
}

/// How the engine makes clients for `ProviderContext.makeHTTPClient`.
public enum HTTPClients {
    public static func make(_ options: HTTPClientOptions) -> any HTTPClient {
        do {
            return try CurlHTTPClient(options: options)
        } catch {
            return FailingHTTPClient(error: error as? HTTPTransportError ?? HTTPTransportError("\(error)", isPermanent: true))
        }
    }
}

/// Stands in when libcurl cannot be initialised: every request fails with the reason.
final class FailingHTTPClient: HTTPClient {
    let error: HTTPTransportError
    init(error: HTTPTransportError) { self.error = error }
    func execute(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        completion(.failure(error))
    }
    func shutdown() {}
}
