import CCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One libcurl easy handle with the options every request shares (HTTPS only, HTTP/1.1, trust,
/// callbacks) set once. The poll thread keeps finished handles in a small pool
/// and reuses them: creating and configuring a handle per request costs more than the request's
/// own bookkeeping. Touched only by the poll thread.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    /// `guarded`: the client checks the addresses it connects to (`AddressGuard`).
    init?(trust: TrustStore, guarded: Bool = false) {
        guard let h = curl_easy_init() else {
            errorBuffer.deallocate()
            return nil
        }
        handle = h
        errorBuffer.initialize(to: 0)
        _ = ccurl_easy_setopt_str(h, CURLOPT_PROTOCOLS_STR, "https")
        // HTTP/2 goes through H2Client; this client is the HTTP/1.1 one (WNS, servers without h2).
        _ = ccurl_easy_setopt_long(h, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        _ = ccurl_easy_setopt_long(h, CURLOPT_NOSIGNAL, 1)
        trust.apply(to: h)
        _ = ccurl_easy_setopt_ptr(h, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = ccurl_easy_setopt_write_cb(h, CURLOPT_WRITEFUNCTION, curlWriteBody)
        _ = ccurl_easy_setopt_header_cb(h, curlWriteHeader)
        if guarded { _ = ccurl_easy_setopt_opensocket_cb(h, curlOpenSocket) }
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// Points the handle at `t`, its request and its headers (everything that differs per request
    /// is set here, so nothing leaks from the previous use).
    func prepare(for t: CurlTransfer, headers: UnsafeMutablePointer<curl_slist>?) {
        let h = handle
        let opaque = Unmanaged.passUnretained(t).toOpaque()
        errorBuffer.pointee = 0
        _ = ccurl_easy_setopt_ptr(h, CURLOPT_PRIVATE, opaque)
        _ = ccurl_easy_setopt_ptr(h, CURLOPT_WRITEDATA, opaque)
        _ = ccurl_easy_setopt_ptr(h, CURLOPT_HEADERDATA, opaque)
        _ = ccurl_easy_setopt_ptr(h, CURLOPT_OPENSOCKETDATA, opaque)
        _ = ccurl_easy_setopt_str(h, CURLOPT_URL, t.request.url)
        _ = ccurl_easy_setopt_long(h, CURLOPT_TIMEOUT_MS, max(1, Int(t.request.timeout * 1000)))
        let method = t.method
        if method == "GET" {
            _ = ccurl_easy_setopt_long(h, CURLOPT_HTTPGET, 1)
        } else {
            // COPYPOSTFIELDS copies the body, so the Swift array need not outlive this call.
            _ = ccurl_easy_setopt_off(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(t.request.body.count))
            _ = t.request.body.withUnsafeBytes { raw in
                // An empty body still needs a non-NULL pointer (NULL means "read from stdin").
                ccurl_easy_setopt_ptr(h, CURLOPT_COPYPOSTFIELDS, raw.baseAddress ?? UnsafeRawPointer(errorBuffer))
            }
        }
        _ = ccurl_easy_setopt_ptr(h, CURLOPT_CUSTOMREQUEST, nil)
        if method != "GET" && method != "POST" { _ = ccurl_easy_setopt_str(h, CURLOPT_CUSTOMREQUEST, method) }
        _ = ccurl_easy_setopt_slist(h, CURLOPT_HTTPHEADER, headers)
    }

    var errorText: String { String(cString: errorBuffer) }
}

/// Finished handles kept for reuse (the poll thread's own).
struct CurlEasyPool {
    private var free: [CurlEasy] = []
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    mutating func take(trust: TrustStore, guarded: Bool) -> CurlEasy? { free.popLast() ?? CurlEasy(trust: trust, guarded: guarded) }

    mutating func give(_ easy: CurlEasy) {
        if free.count < capacity { free.append(easy) }
    }
}

// C callbacks: no captures; the transfer travels as the opaque user pointer.

private let curlWriteBody: curl_write_callback = { ptr, size, count, user in
    let n = size * count
    guard let user, let ptr else { return n }
    let t = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    let keep = min(n, max(0, HTTPResponse.maxBodyBytes - t.body.count))   // the rest is read and dropped
    if keep > 0 { ptr.withMemoryRebound(to: UInt8.self, capacity: keep) { t.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: keep)) } }
    return n
}

/// Opens the socket of a new connection, or refuses to (CURL_SOCKET_BAD: curl tries the next
/// address, then fails the transfer) when the transfer's `AddressGuard` refuses the address: the
/// address checked is the one curl is about to connect to, whatever the resolver said before.
private let curlOpenSocket: curl_opensocket_callback = { user, _, address in
    guard let address else { return -1 }
    let sa = (UnsafeRawPointer(address) + MemoryLayout<curl_sockaddr>.offset(of: \curl_sockaddr.addr)!).assumingMemoryBound(to: sockaddr.self)
    if let user {
        let t = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
        if let why = t.addressRefusal(sa) {
            if t.refusal == nil { t.refusal = why }
            return -1
        }
    }
    let a = address.pointee
    let fd = socket(a.family, a.socktype, a.protocol)
    if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }   // as curl's own, and TLSSocket's
    return fd
}

/// One header line per call, status line and the blank line included. The poll thread only
/// copies the bytes (a new status line, for 1xx interim answers and redirects, starts afresh);
/// `CurlTransfer.response` parses them on the completion queue.
private let curlWriteHeader: curl_write_callback = { ptr, size, count, user in
    let n = size * count
    guard let user, let ptr else { return n }
    let t = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    let line = ptr.withMemoryRebound(to: UInt8.self, capacity: n) { UnsafeBufferPointer(start: $0, count: n) }
    if n >= 5, line[0] == UInt8(ascii: "H"), line[1] == UInt8(ascii: "T"), line[4] == UInt8(ascii: "/") {
        t.rawHeaders.removeAll(keepingCapacity: true)
        return n
    }
    t.rawHeaders.append(contentsOf: line)
    return n
}
