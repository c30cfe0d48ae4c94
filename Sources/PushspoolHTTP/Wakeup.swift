import CCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Wakes a transport's poll thread when requests are queued or the client shuts
/// down. An fd (not `curl_multi_wakeup`) because it keeps working across connection rotation: a
/// submitter never needs to know which multi handle is current. Linux: one eventfd; elsewhere a
/// non-blocking pipe.
final class Wakeup: @unchecked Sendable {
    /// The fd the poll thread waits on.
    let readFD: Int32
    private let writeFD: Int32

    init() throws(HTTPTransportError) {
        #if os(Linux)
        let fd = ccurl_eventfd()
        guard fd >= 0 else { throw HTTPTransportError("eventfd failed", isPermanent: true) }
        readFD = fd
        writeFD = fd
        #else
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw HTTPTransportError("pipe failed", isPermanent: true) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        readFD = fds[0]
        writeFD = fds[1]
        #endif
    }

    func signal() {
        var one: UInt64 = 1
        // EAGAIN means a wakeup is already pending, which is all we need.
        _ = withUnsafeBytes(of: &one) { write(writeFD, $0.baseAddress, $0.count) }
    }

    /// Consumes pending wakeups (called by the poll thread after it saw the fd readable).
    func drain() {
        var buf: (UInt64, UInt64) = (0, 0)
        while withUnsafeMutableBytes(of: &buf, { read(readFD, $0.baseAddress, $0.count) }) > 0 {
            #if os(Linux)
            break   // one read resets an eventfd counter
            #endif
        }
    }

    deinit {
        close(readFD)
        if writeFD != readFD { close(writeFD) }
    }
}
