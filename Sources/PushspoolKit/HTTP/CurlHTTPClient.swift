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
        var stopped = false
    }

    private static let globalInit: Void = { _ = curl_global_init(Int(CURL_GLOBAL_ALL)) }()

    /// Runtime libcurl version as 0xXXYYZZ (7.88.1 = 0x075801).
    public static var libcurlVersionNum: Int { Int(ccurl_version_info().pointee.version_num) }

    public init(options: HTTPClientOptions) throws {
        _ = Self.globalInit
        self.options = options
        trust = TrustStore(extraCAPEM: options.extraCAPEM)
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
        let accepted = state.withLock { q in
            if q.stopping { return false }
            q.pending.append(t)
            return true
        }
        guard accepted else {
            completion(.failure(HTTPTransportError("HTTP client is shut down")))
            return
        }
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

        init(client: CurlHTTPClient, current: CurlMulti) {
            self.client = client
            self.current = current
        }

        func run() {
            client.loopThreadID.withLock { $0 = pthread_self() }
            var wait = [curl_waitfd]()
            while true {
                let (batch, stopping) = client.state.withLock { q in
                    defer { q.pending.removeAll(keepingCapacity: true) }
                    return (q.pending, q.stopping)
                }
                if stopping {
                    stop(unstarted: batch)
                    return
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
            let opaque = Unmanaged.passUnretained(t).toOpaque()
            if let error = t.makeEasy(trust: client.trust, options: client.options, opaque: opaque) {
                client.hand([(t, .failure(error))])
            } else if !current.add(t) {
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
            client.hand(done.map { ($0.0, $0.0.finish(code: $0.1, requireHTTP2: requireH2)) })
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
