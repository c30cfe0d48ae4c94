import CCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The TCP sockets libcurl has open for one client, so the poll thread can cork them for the
/// length of one loop turn.
///
/// Why: libcurl 7.88.1 hands nghttp2's frames to TLS one at a time, so every request costs three
/// `send` calls (HEADERS, DATA and the RST_STREAM after it finished), each pushed onto the wire as
/// its own small segment. The kernel's per-segment work (and on loopback the receiver's) was the
/// largest single cost of the poll thread. With `TCP_CORK` set while curl writes and cleared right
/// after, one turn's frames leave as a few full segments: the same bytes, no added wait (the cork
/// is lifted before the thread sleeps). Linux only; elsewhere corking does nothing.
///
/// Touched only by the poll thread (curl calls the socket callbacks from inside curl calls made
/// there). Every easy handle and multi handle keeps it alive: curl calls `close` for a connection
/// whenever the connection goes, which can be after the easy that opened it was reused.
final class CurlSockets: @unchecked Sendable {
    private var fds: Set<Int32> = []
    private var corked = false

    /// Installs the callbacks on an easy handle (once, when the handle is created).
    func register(_ easy: UnsafeMutableRawPointer) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        _ = ccurl_easy_setopt_ptr(easy, CURLOPT_SOCKOPTDATA, me)
        _ = ccurl_easy_setopt_ptr(easy, CURLOPT_CLOSESOCKETDATA, me)
        _ = ccurl_easy_setopt_sockopt_cb(easy, curlSocketOpened)
        _ = ccurl_easy_setopt_closesocket_cb(easy, curlSocketClosing)
    }

    fileprivate func opened(_ fd: Int32) {
        fds.insert(fd)
        if corked { _ = ccurl_set_cork(fd, 1) }
    }

    fileprivate func closing(_ fd: Int32) {
        fds.remove(fd)
    }

    /// Holds back partial segments on every socket until `uncork()`.
    func cork() {
        corked = true
        for fd in fds { _ = ccurl_set_cork(fd, 1) }
    }

    /// Sends what was held back, now.
    func uncork() {
        corked = false
        for fd in fds { _ = ccurl_set_cork(fd, 0) }
    }
}

private let curlSocketOpened: curl_sockopt_callback = { user, fd, _ in
    if let user { Unmanaged<CurlSockets>.fromOpaque(user).takeUnretainedValue().opened(fd) }
    return Int32(CURL_SOCKOPT_OK)
}

/// With a close callback installed, closing the socket is ours to do.
private let curlSocketClosing: curl_closesocket_callback = { user, fd in
    if let user { Unmanaged<CurlSockets>.fromOpaque(user).takeUnretainedValue().closing(fd) }
    return close(fd)
}
