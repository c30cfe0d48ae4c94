import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells a waiter when a file is closed by anyone (Linux inotify, `IN_CLOSE_WRITE |
/// IN_CLOSE_NOWRITE` on the file): what the holder of an advisory lock on it does last when it
/// lets go, or the kernel for it when its process dies. A waiter for the lock tries again at
/// that moment, instead of every few milliseconds. Other closes of the file (other waiters)
/// wake it too: it tries again and waits again.
final class FileCloseWatch {
    private let fd: Int32

    /// nil where inotify cannot watch the file (no inotify, the per-user limit of instances).
    init?(path: String) {
        #if os(Linux)
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        guard inotify_add_watch(fd, path, UInt32(IN_CLOSE_WRITE | IN_CLOSE_NOWRITE)) >= 0 else {
            close(fd)
            return nil
        }
        self.fd = fd
        #else
        return nil
        #endif
    }

    deinit { close(fd) }

    /// Waits for a close since the watch began or since the last wait returned true; false once
    /// `deadline` has come without one (a deadline already past looks once).
    func wait(until deadline: DispatchTime) -> Bool {
        while true {
            let now = DispatchTime.now()
            let ms = now >= deadline ? 0 : Int32(clamping: (deadline.uptimeNanoseconds - now.uptimeNanoseconds + 999_999) / 1_000_000)
            var watched = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&watched, 1, ms)
            if ready > 0 {
                // Drain the non-blocking fd: which close it was does not matter.
                var buffer = [UInt8](repeating: 0, count: 4096)
                while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
                return true
            }
            if ready < 0 && errno != EINTR { return false }
            if ready == 0 && ms == 0 { return false }
        }
    }
}
