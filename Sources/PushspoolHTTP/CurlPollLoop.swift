import CCurl
import Foundation

/// The client's own thread: adds queued requests, drives every pool with `curl_multi_perform`,
/// hands finished requests over, and sleeps in `curl_multi_poll` on the current pool's sockets,
/// the retired pools' sockets and the wakeup fd. Everything here belongs to this thread alone.
final class CurlPollLoop: @unchecked Sendable {
    let core: CurlClientCore
    var current: CurlMulti
    var draining: [CurlMulti] = []
    /// Finished easy handles for reuse; about one per stream in flight.
    var easies: CurlEasyPool

    init(core: CurlClientCore, current: CurlMulti) {
        self.core = core
        self.current = current
        easies = CurlEasyPool(capacity: min(4096, max(64, core.options.maxConcurrentStreams)))
    }

    func run() {
        core.poll.loopStarted()
        var wait = [curl_waitfd]()
        while true {
            let (batch, stopping, rotate) = core.state.withLock { q in
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
            if rotate, current.added > 0 { retire() }
            for t in batch { start(t) }
            current.perform()
            // Every retired pool on every turn: skipping one whose sockets looked idle left
            // transfers stalled (data already read into TLS/nghttp2 buffers raises no poll event).
            for m in draining { m.perform() }
            finishDone()

            // Sleep until a socket of any pool, a curl timer or a new request needs us.
            wait.removeAll(keepingCapacity: true)
            wait.append(curl_waitfd(fd: core.poll.wakeup.readFD, events: Int16(CURL_WAIT_POLLIN), revents: 0))
            // A retired pool may hold data already read off its socket (no poll event for it):
            // while any exists, look at them at least every 20 ms. Otherwise curl_multi_poll
            // itself wakes at libcurl's next timer (a transfer's or a connect's timeout) and
            // requests and the stop come through the wakeup fd: nothing else needs a wake-up.
            var timeout = draining.isEmpty ? Self.idleWaitMs : 20
            for m in draining {
                wait += m.waitFDs()
                let ms = m.timeoutMs()
                if ms >= 0 { timeout = min(timeout, ms) }
            }
            wait.withUnsafeMutableBufferPointer { w in
                _ = curl_multi_poll(current.handle, w.baseAddress, UInt32(w.count), Int32(timeout), nil)
            }
            if wait[0].revents != 0 { core.poll.wakeup.drain() }
        }
    }

    private func start(_ t: CurlTransfer) {
        guard let easy = easies.take(trust: core.trust, guarded: core.options.addressGuard != nil) else {
            core.hand([(t, .failure(HTTPTransportError("curl_easy_init failed")))])
            return
        }
        if let error = t.attach(easy) {
            easies.give(easy)
            core.hand([(t, .failure(error))])
        } else if !current.add(t) {
            t.easy = nil
            easies.give(easy)
            core.hand([(t, .failure(HTTPTransportError("curl_multi_add_handle failed")))])
        }
    }

    private func finishDone() {
        var fromCurrent: [(CurlTransfer, CURLcode)] = []
        var fromDraining: [(CurlTransfer, CURLcode)] = []
        current.collectDone(into: &fromCurrent)
        for m in draining { m.collectDone(into: &fromDraining) }
        // A retired pool with nothing in flight is closed (its connection goes with it).
        draining.removeAll { $0.inFlight == 0 }
        guard !fromCurrent.isEmpty || !fromDraining.isEmpty else { return }

        var results: [(CurlTransfer, Result<CurlTransfer.Answer, HTTPTransportError>)] = []
        var again: [CurlTransfer] = []
        var currentLost = false
        for (done, isCurrent) in [(fromCurrent, true), (fromDraining, false)] {
            for (t, code) in done {
                // The connection went away before any response to this request arrived (a
                // kept-alive connection the server had closed): send it again on a fresh
                // connection, a couple of times, before reporting it. Only a server that processed
                // a request and then lost the connection could see it twice, as with any retry.
                if t.connectionRetries < Self.connectionRetries, t.isUnansweredConnectionLoss(code) {
                    t.connectionRetries += 1
                    again.append(t)
                    if isCurrent { currentLost = true }
                } else {
                    results.append((t, t.finish(code: code)))
                }
                if let easy = t.easy { easies.give(easy) }
                t.easy = nil
            }
        }
        if !results.isEmpty { core.hand(results) }
        guard !again.isEmpty else { return }
        if currentLost, current.added > 0 { retire() }
        for t in again { start(t) }
    }

    /// Stops adding to the current pool and lets it drain; later requests open a new connection.
    private func retire() {
        guard let fresh = CurlMulti(options: core.options, gauge: core.gauge) else { return }
        draining.append(current)
        current = fresh
    }

    /// The longest sleep with no retired pool: an hour, only a bound (it woke every second).
    static let idleWaitMs = 3_600_000

    /// Fresh-connection resends per request before its failure is reported.
    static let connectionRetries = 2

    private func stop(unstarted: [CurlTransfer]) {
        var all = unstarted
        for m in [current] + draining { all += m.removeAll() }
        draining.removeAll()
        let error = HTTPTransportError("HTTP client shut down before the response")
        core.hand(all.map { ($0, .failure(error)) })
        core.poll.loopExited()
    }
}
