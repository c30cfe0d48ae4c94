import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The HTTP/2 transport under APNs, FCM and the hub: libnghttp2 sessions over OpenSSL TLS on
/// non-blocking sockets. Per origin, long-lived connections that follow demand: as many as the
/// requests waiting need at the server's SETTINGS_MAX_CONCURRENT_STREAMS (up to
/// `maxConnectionsPerHost`), each request on the least-loaded one, the extras closed once demand
/// has fitted in fewer for `extraConnectionIdle` seconds; the last one stays. PING for liveness,
/// GOAWAY and REFUSED_STREAM handled so that a request the server never processed is sent again
/// (on whichever connection can take it) and an answered one never is.
///
/// Threading: `execute` builds the request's header block on the caller's thread, queues it and
/// wakes the poll thread (one wakeup per batch). The poll thread alone touches sockets, TLS and
/// nghttp2. DNS, TCP connect and the TLS handshake run on a Dispatch queue so a slow connect never
/// stalls traffic on open connections. Answers are handed, one batch per loop turn, to a serial
/// completion queue.
public final class H2Client: HTTPClient {
    private let core: H2Core

    public convenience init(options: HTTPClientOptions) throws(HTTPTransportError) {
        try self.init(options: options, rootsDirectory: nil, extraCAPEM: options.extraCAPEM)
    }

    /// `rootsDirectory`: a hashed directory of roots in place of the system's (tests).
    init(options: HTTPClientOptions, rootsDirectory: String?, extraCAPEM: String?) throws(HTTPTransportError) {
        let alpn = options.versions == .http2Only ? ["h2"] : ["h2", "http/1.1"]
        let tls = try TLSContext(extraCAPEM: extraCAPEM, alpn: alpn, rootsDirectory: rootsDirectory)
        core = H2Core(options: options, tls: tls, poll: try PollThread(label: "pushspool.h2"), gauge: ConnectionGauge())
        // The thread keeps the loop and the core alive, never the client: dropping the client
        // without `shutdown()` still stops the thread (deinit below).
        let loop = H2Loop(core: core)
        let thread = Thread { loop.run() }
        thread.name = "pushspool-h2"
        thread.start()
    }

    deinit { core.shutdown() }

    public func execute(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        let known = core.lastOrigin.withLock { $0 }
        guard let (origin, pathStart) = Origin.parse(request.url, known: known) else {
            completion(.failure(HTTPTransportError("not an https URL: \(request.url.prefix(80))", isPermanent: true)))
            return
        }
        if origin.authority != known?.authority { core.lastOrigin.withLock { $0 = origin } }
        let stream = H2Stream(request: request, origin: origin, pathStart: pathStart, completion: completion)
        let (accepted, wake) = core.inbox.withLock { box in
            if box.stopping { return (false, false) }
            box.requests.append(stream)
            core.gauge.started()     // before the loop can take it (and count its answer)
            // Only a sleeping loop needs the wakeup, and only once: a busy loop takes the whole
            // inbox on its next turn anyway.
            defer { box.asleep = false }
            return (true, box.asleep)
        }
        guard accepted else {
            completion(.failure(HTTPTransportError("HTTP client is shut down")))
            return
        }
        if wake { core.poll.wakeup.signal() }
    }

    public func condemnConnections() {
        core.inbox.withLock { $0.condemn = true }
        core.poll.wakeup.signal()
    }

    public func shutdown() { core.shutdown() }

    /// What the fake servers and benchmarks may ask: connections opened so far.
    public var connectionsOpened: Int { core.connectionsOpened.load(ordering: .relaxed) }

    public var connections: HTTPConnectionCount { core.gauge.count }
}

/// What the client, its poll thread and its connect jobs share.
final class H2Core: @unchecked Sendable {
    struct Inbox {
        var requests: [H2Stream] = []
        var connected: [(Origin, Result<TLSSocket, HTTPTransportError>)] = []
        var condemn = false
        var stopping = false
        /// The loop is (about to be) asleep in poll with nothing to do: a new request must wake it.
        var asleep = false
    }

    let options: HTTPClientOptions
    let tls: TLSContext
    let poll: PollThread
    let inbox = Mutex<Inbox>(Inbox())
    /// Where the last request went: nearly every request goes there again (`Origin.parse`).
    let lastOrigin = Mutex<Origin?>(nil)
    let connectionsOpened = Atomic<Int>(0)
    /// Connections open and requests unanswered now (the HTTP/1.1 fallback counts in it too).
    let gauge: ConnectionGauge
    let connects = DispatchQueue(label: "pushspool.h2.connect", attributes: .concurrent)

    init(options: HTTPClientOptions, tls: TLSContext, poll: PollThread, gauge: ConnectionGauge) {
        self.options = options
        self.tls = tls
        self.poll = poll
        self.gauge = gauge
    }

    func shutdown() {
        let first = inbox.withLock { box in
            defer { box.stopping = true }
            return !box.stopping
        }
        if first { poll.awaitStop() }
    }

    func hand(_ batch: [(H2Stream, Result<HTTPResponse, HTTPTransportError>)]) {
        gauge.answered(batch.count)
        poll.complete {
            // Read in place: destructuring each element copied its stream and answer (retains
            // and releases per answer).
            batch.withUnsafeBufferPointer { answers in
                for i in answers.indices { answers[i].0.completion(answers[i].1) }
            }
        }
    }
}

/// The poll thread: queues per origin, connections, timers. Everything here is its alone.
final class H2Loop: H2ConnectionSink, @unchecked Sendable {
    private let core: H2Core
    private var pools: [Origin: H2Pool] = [:]
    private var lastPool: (Origin, H2Pool)?
    private var connections: [H2Connection] = []
    private var done: [(H2Stream, Result<HTTPResponse, HTTPTransportError>)] = []
    /// Origins that answered ALPN without h2 (allowed under `.http2Preferred`): HTTP/1.1 client.
    private var http1: (any HTTPClient)?
    private var lastTimerCheck = monotonicNow()

    /// How often a request goes again after the server refused it unprocessed.
    static let maxRefusals = 8

    init(core: H2Core) { self.core = core }

    // MARK: Sink

    func finished(_ stream: H2Stream, _ result: Result<HTTPResponse, HTTPTransportError>) {
        done.append((stream, result))
    }

    func refused(_ stream: H2Stream) {
        stream.refusals += 1
        if stream.refusals > Self.maxRefusals {
            done.append((stream, .failure(HTTPTransportError("refused by the server \(stream.refusals) times without being processed"))))
        } else {
            pool(stream.origin).pushRetry(stream)
        }
    }

    private func pool(_ origin: Origin) -> H2Pool {
        // Nearly every request goes where the one before went: compared, not hashed.
        if let (o, p) = lastPool, o == origin { return p }
        let p = pools[origin] ?? H2Pool()
        pools[origin] = p
        lastPool = (origin, p)
        return p
    }

    // MARK: Loop

    func run() {
        core.poll.loopStarted()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { buffer.deallocate() }
        var fds: [pollfd] = []
        while true {
            let box = core.inbox.withLock { box in
                defer {
                    box.requests.removeAll(keepingCapacity: true)
                    box.connected.removeAll()
                    box.condemn = false
                }
                return box
            }
            if box.stopping { return stop(unstarted: box.requests, connected: box.connected) }
            if box.condemn { for c in connections { c.draining = true } }
            for (origin, result) in box.connected { connected(origin, result) }
            for s in box.requests { enqueue(s) }

            assign()
            for c in connections { c.flush() }
            reap()
            hand()

            // Sleep until a socket, a new request or the next timer check needs us.
            fds.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: core.poll.wakeup.readFD, events: Int16(POLLIN), revents: 0))
            for c in connections {
                fds.append(pollfd(fd: c.socket.fd, events: Int16(POLLIN) | (c.wantsWrite ? Int16(POLLOUT) : 0), revents: 0))
            }
            // Asleep only if nothing arrived since the inbox was taken; otherwise go round again.
            let idle = core.inbox.withLock { box in
                box.asleep = box.requests.isEmpty && box.connected.isEmpty && !box.condemn && !box.stopping
                return box.asleep
            }
            let rc = poll(&fds, nfds_t(fds.count), idle ? idleTimeout() : 0)
            core.inbox.withLock { $0.asleep = false }
            if rc > 0 {
                if fds[0].revents != 0 { core.poll.wakeup.drain() }
                for (i, c) in connections.enumerated() where fds[i + 1].revents != 0 {
                    if fds[i + 1].revents & Int16(POLLOUT) != 0 { c.flush() }
                    c.readAvailable(into: buffer)
                }
            }
            timers()
        }
    }

    private func enqueue(_ s: H2Stream) {
        let p = pool(s.origin)
        if p.speaksHTTP1 { return forwardToHTTP1(s) }
        p.push(s)
    }

    /// Gives waiting requests to connections with free stream slots, each to the least-loaded
    /// one; opens connections where those cannot take them all.
    private func assign() {
        for (origin, p) in pools where p.waiting > 0 {
            var open = connections.filter { $0.origin == origin && $0.capacity > 0 }
            if open.count == 1 {
                let c = open[0]
                var room = c.capacity
                while room > 0, let s = p.pop() {
                    if c.submit(s) { room -= 1 } else { p.unpop(s); break }
                }
            } else {
                // The connection with the most free slots takes the next request: the load stays
                // even, so no connection's window or server-side queue is the one that lags.
                while !open.isEmpty {
                    var best = 0
                    for i in 1..<open.count where open[i].capacity > open[best].capacity { best = i }
                    guard open[best].capacity > 0 else { break }
                    guard let s = p.pop() else { break }
                    if !open[best].submit(s) { p.unpop(s); open.remove(at: best) }
                }
            }
            grow(origin, p)
        }
    }

    /// Opens as many connections as the requests still waiting need at the stream limit the open
    /// ones carry. The first opens at once; more only once every open connection is full and its
    /// limit is known: its SETTINGS have come, and either allow more than one stream or a first
    /// answer has come (APNs allows a token-authenticated connection one stream until a request
    /// with a valid JWT has succeeded, then raises the limit: one stream then says nothing about
    /// how many connections demand needs).
    private func grow(_ origin: Origin, _ p: H2Pool) {
        guard p.waiting > 0 else { return }
        let open = connections.filter { $0.origin == origin && $0.usable }
        if open.isEmpty {
            if p.connecting == 0 { connect(origin, p) }
            return
        }
        guard open.allSatisfy({ $0.ready && ($0.streamLimit > 1 || $0.answered > 0) && $0.capacity == 0 }) else { return }
        let more = p.connectionsToOpen(open: open.count, perConnection: open.map(\.streamLimit).min()!,
                                       max: core.options.maxConnectionsPerHost)
        for _ in 0..<more { connect(origin, p) }
    }

    /// Closes one extra connection of an origin once demand (streams in flight and requests
    /// waiting) has fitted in fewer connections for `extraConnectionIdle` seconds: it takes no
    /// new streams, finishes what it carries, then says GOAWAY. One at a time; the last stays.
    private func shed(now: Double) {
        for (origin, p) in pools {
            let open = sheddable(origin)
            guard open.count > 1 else { p.busyAt = now; continue }
            let demand = open.reduce(p.waiting) { $0 + $1.streams.count }
            let perConnection = max(1, open.map(\.streamLimit).min()!)
            if (demand + perConnection - 1) / perConnection >= open.count {
                p.busyAt = now
            } else if now - p.busyAt >= core.options.extraConnectionIdle {
                // The least-loaded one, the newest of equals: the oldest has proven itself.
                let extra = open.reversed().min { $0.streams.count < $1.streams.count }!
                extra.draining = true
                p.busyAt = now
            }
        }
    }

    /// The connections of an origin `shed` weighs: open for new streams and past their SETTINGS.
    /// One is never shed; with more, `shed` is due `extraConnectionIdle` after the last demand.
    private func sheddable(_ origin: Origin) -> [H2Connection] {
        connections.filter { $0.origin == origin && $0.usable && $0.ready }
    }

    private func connect(_ origin: Origin, _ p: H2Pool) {
        p.connecting += 1
        let core = self.core
        core.connects.async {
            let result = Result { () throws(HTTPTransportError) in
                try TLSSocket.connect(host: origin.host, port: origin.port, context: core.tls, timeout: core.options.connectTimeout,
                                      addressGuard: core.options.addressGuard)
            }
            core.inbox.withLock { $0.connected.append((origin, result)) }
            core.poll.wakeup.signal()
        }
    }

    private func connected(_ origin: Origin, _ result: Result<TLSSocket, HTTPTransportError>) {
        let p = pool(origin)
        p.connecting -= 1
        switch result {
        case .success(let socket) where socket.alpn == "h2":
            do {
                let c = try H2Connection(origin: origin, socket: socket, sink: self, maxConcurrentStreams: core.options.maxConcurrentStreams)
                connections.append(c)
                p.busyAt = monotonicNow()
                core.connectionsOpened.add(1, ordering: .relaxed)
                core.gauge.opened()
            } catch {
                failWaiting(p, error)
            }
        case .success(let socket):
            if core.options.versions == .http2Preferred {
                p.speaksHTTP1 = true
                for s in p.takeAll() { forwardToHTTP1(s) }
            } else {
                let chose = socket.alpn.isEmpty ? "no protocol" : socket.alpn
                failWaiting(p, HTTPTransportError("\(origin.authority) does not speak HTTP/2 (ALPN: \(chose))", isPermanent: true))
            }
        case .failure(let error):
            // Requests wait for a connection only while one could still take them.
            if p.connecting == 0 && !connections.contains(where: { $0.origin == origin && $0.usable }) {
                failWaiting(p, error)
            }
        }
    }

    private func failWaiting(_ p: H2Pool, _ error: HTTPTransportError) {
        for s in p.takeAll() { done.append((s, .failure(error))) }
    }

    private func forwardToHTTP1(_ s: H2Stream) {
        core.gauge.answered()        // the HTTP/1.1 client counts it from here, in the same gauge
        if http1 == nil {
            var options = core.options
            options.versions = .http1
            // The same options built the HTTP/2 transport, so this fails only when the process is
            // out of resources: the request fails with the reason.
            do {
                http1 = try HTTPClients.make(options, gauge: core.gauge)
            } catch {
                s.completion(.failure(error))
                return
            }
        }
        http1!.execute(s.request, completion: s.completion)
    }

    /// Tears down failed connections and closes finished ones. A failed connection's streams are
    /// sent again when the server cannot have processed them, else answered with the failure.
    private func reap() {
        guard connections.contains(where: { $0.isDone }) else { return }
        connections.removeAll { c in
            guard c.isDone else { return false }
            core.gauge.closed()
            if let why = c.failure {
                for (id, s) in c.takeStreams() {
                    if s.timedOut {
                        done.append((s, .failure(s.timeoutFailure)))
                    } else if c.mayHaveProcessed(id) {
                        done.append((s, .failure(HTTPTransportError("connection to \(c.origin.authority) lost before the response: \(why)"))))
                    } else {
                        refused(s)
                    }
                }
            } else {
                c.close()
            }
            return true
        }
    }

    private func hand() {
        guard !done.isEmpty else { return }
        core.hand(done)
        done.removeAll(keepingCapacity: true)
    }

    /// How long `poll` may sleep when nothing new has come (ms, -1: until woken). While requests
    /// wait or are in flight, a quarter second: their deadlines are checked at that step. Else
    /// until a connection's liveness check or an extra connection's shedding is due, and for
    /// good with no connection open: an idle dispatcher holding its APNs connection wakes once
    /// per PING interval, not four times a second.
    private func idleTimeout() -> Int32 {
        if connections.contains(where: { !$0.streams.isEmpty }) || pools.values.contains(where: { $0.waiting > 0 }) { return 250 }
        let o = core.options
        var due = Double.infinity
        for c in connections { due = min(due, c.livenessDue(interval: o.pingInterval, timeout: o.pingTimeout)) }
        for (origin, p) in pools where sheddable(origin).count > 1 {
            due = min(due, p.busyAt + o.extraConnectionIdle)
        }
        guard due.isFinite else { return -1 }
        // Rounded up, and past the timers' own quarter-second step: woken early, it would find nothing due.
        let wait = max(due - monotonicNow(), 0.25)
        return Int32(min(wait * 1000, Double(Int32.max)).rounded(.up))
    }

    /// Deadlines of requests, PING liveness; four times a second at most.
    private func timers() {
        let now = monotonicNow()
        guard now - lastTimerCheck >= 0.25 else { return }
        lastTimerCheck = now
        for c in connections {
            c.checkLiveness(now: now, interval: core.options.pingInterval, timeout: core.options.pingTimeout)
            for (id, s) in c.streams where s.deadline < now { c.cancel(id) }
        }
        shed(now: now)
        for p in pools.values {
            for s in p.expire(now: now) { done.append((s, .failure(HTTPTransportError("no response within \(Int(s.request.timeout)) s (never sent: no connection or stream slot)")))) }
        }
    }

    private func stop(unstarted: [H2Stream], connected: [(Origin, Result<TLSSocket, HTTPTransportError>)]) {
        let error = HTTPTransportError("HTTP client shut down before the response")
        var all = unstarted
        for p in pools.values { all += p.takeAll() }
        for c in connections {
            all += c.takeStreams().map { $0.1 }
            c.close()
        }
        core.gauge.closed(connections.count)
        connections.removeAll()
        done += all.map { ($0, .failure(error)) }
        hand()
        http1?.shutdown()
        core.poll.loopExited()
    }
}
