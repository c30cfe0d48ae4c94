import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A stop that `poll(2)` waits on beside a socket: a thread blocked on a database connection
/// (the queue's `LISTEN`) wakes the moment the stop is set, instead of looking at a flag every
/// so often. Set once, it stays set: its pipe is never drained, so it stays readable.
final class StopEvent: Sendable {
    /// Readable once the stop is set.
    let fd: Int32
    private let writeFD: Int32
    private let flag = Atomic<Bool>(false)

    init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
        }
        fd = fds[0]
        writeFD = fds[1]
    }

    deinit {
        if fd >= 0 { close(fd) }
        if writeFD >= 0 { close(writeFD) }
    }

    var isSet: Bool { flag.load(ordering: .acquiring) }

    /// Sets the stop and wakes whoever waits on `fd`. Safe from any thread, any number of times.
    func set() {
        guard !flag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    /// Waits at most `seconds` for the stop; true when it is set.
    @discardableResult
    func wait(seconds: Double) -> Bool {
        if isSet { return true }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while poll(&p, 1, Int32(max(0, min(seconds, 86_400)) * 1000)) < 0 && errno == EINTR {}
        return isSet
    }
}
