#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGINT, SIGTERM and SIGHUP as an event to wait for: each handler (installed synchronously,
/// before anything is served) writes a byte into a pipe that `wait()` reads. A signal that comes
/// at any moment after `install()` is counted, never ignored: with Dispatch signal sources, the
/// signal had to be ignored until the source was registered on Dispatch's own thread, and a
/// stop sent in that window was lost.
enum StopSignals {
    nonisolated(unsafe) private static var readEnd: Int32 = -1
    nonisolated(unsafe) private static var writeEnd: Int32 = -1

    static func install() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        readEnd = ends[0]
        writeEnd = ends[1]
        var set = sigset_t()
        sigemptyset(&set)
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            // Async-signal-safe: one write(2) of a byte.
            _ = signal(sig) { _ in
                var byte: UInt8 = 1
                _ = write(StopSignals.writeEnd, &byte, 1)
            }
            sigaddset(&set, sig)
        }
        // A parent that spawned serve from a thread blocking signals (a Dispatch worker: test
        // runners, supervisors written in Swift) passes its mask on; a blocked SIGTERM would stay
        // pending for ever. Threads made from here on inherit the unblocked mask.
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Blocks until the next stop signal.
    static func wait() {
        var byte: UInt8 = 0
        while read(readEnd, &byte, 1) < 0 && errno == EINTR {}
    }
}
