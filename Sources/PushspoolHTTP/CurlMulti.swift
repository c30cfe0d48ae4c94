import CCurl

/// One libcurl multi handle, i.e. one connection pool (HTTP/1.1: one request per connection at a
/// time, up to `maxConnectionsPerHost` connections). Touched only by the poll thread.
///
/// Why several exist at once: a pool whose connection was condemned by the service or lost is
/// retired: nothing new is added to it, its requests finish ("draining"), then it closes.
final class CurlMulti {
    let handle: UnsafeMutableRawPointer
    /// Transfers added over this pool's lifetime.
    private(set) var added = 0
    /// Owns the transfers while curl works on them (their easy handles point back at them unretained).
    private var transfers: [ObjectIdentifier: CurlTransfer] = [:]
    var inFlight: Int { transfers.count }
    /// HTTP/1.1: each transfer in flight holds a connection of its own (idle kept-alive ones are
    /// not counted).
    private let gauge: ConnectionGauge

    init?(options: HTTPClientOptions, gauge: ConnectionGauge) {
        guard let m = curl_multi_init() else { return nil }
        handle = m
        self.gauge = gauge
        _ = ccurl_multi_setopt_long(m, CURLMOPT_MAX_HOST_CONNECTIONS, max(1, options.maxConnectionsPerHost))
    }

    deinit {
        _ = removeAll()
        curl_multi_cleanup(handle)   // closes this pool's connections
    }

    /// Adds a transfer whose easy handle is ready. Returns false if curl refused it.
    func add(_ t: CurlTransfer) -> Bool {
        guard let easy = t.easy?.handle, curl_multi_add_handle(handle, easy) == CURLM_OK else { return false }
        added += 1
        transfers[ObjectIdentifier(t)] = t
        gauge.opened()
        gauge.started()
        return true
    }

    func perform() {
        var running: Int32 = 0
        _ = curl_multi_perform(handle, &running)
    }

    /// Removes every finished transfer and returns it with curl's result code.
    func collectDone(into done: inout [(CurlTransfer, CURLcode)]) {
        var left: Int32 = 0
        while let msg = curl_multi_info_read(handle, &left) {
            guard msg.pointee.msg == CURLMSG_DONE, let easy = msg.pointee.easy_handle else { continue }
            let code = ccurl_msg_result(msg)
            var priv: UnsafeMutableRawPointer?
            _ = ccurl_easy_getinfo_ptr(easy, CURLINFO_PRIVATE, &priv)
            _ = curl_multi_remove_handle(handle, easy)
            guard let priv else { continue }
            let key = ObjectIdentifier(Unmanaged<CurlTransfer>.fromOpaque(priv).takeUnretainedValue())
            if let t = transfers.removeValue(forKey: key) {
                done.append((t, code))
                gauge.closed()
                gauge.answered()
            }
        }
    }

    /// Removes every transfer still in flight (shutdown).
    func removeAll() -> [CurlTransfer] {
        let all = Array(transfers.values)
        for t in all { if let easy = t.easy?.handle { _ = curl_multi_remove_handle(handle, easy) } }
        transfers.removeAll()
        gauge.closed(all.count)
        gauge.answered(all.count)
        return all
    }

    /// Sockets of this pool for the poll thread to watch while it sleeps on another pool.
    func waitFDs() -> [curl_waitfd] {
        var fds = [curl_waitfd](repeating: curl_waitfd(), count: 16)
        let n = fds.withUnsafeMutableBufferPointer { ccurl_multi_waitfds(handle, $0.baseAddress, Int32($0.count)) }
        return Array(fds.prefix(Int(n)))
    }

    /// Milliseconds until curl wants to be called for this pool (-1: no timer).
    func timeoutMs() -> Int {
        var ms = -1
        _ = curl_multi_timeout(handle, &ms)
        return ms
    }
}
