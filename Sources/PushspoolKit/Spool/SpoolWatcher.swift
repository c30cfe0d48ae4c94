import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells the dispatcher that `incoming/` may have changed. Events are hints only: the dispatcher
/// rescans the folder (coalesced), so duplicate or lost events cost nothing but a scan.
///
/// Linux: inotify (IN_MOVED_TO, IN_CLOSE_WRITE) on a Dispatch read source. macOS: a Dispatch
/// vnode source (`makeFileSystemObjectSource` does not exist in Linux's libdispatch). Anywhere
/// those fail: a timer poll.
///
/// `closes` watches something else: every close of a file in the folder (IN_CLOSE_WRITE and
/// IN_CLOSE_NOWRITE), which is what the holder of a job file's lock in `active/` does last when
/// it lets go, or the kernel for it when its process dies, and names moved in (IN_MOVED_TO). The
/// folder's own closes (a listing) and hidden files' are not reported. Only inotify sees closes:
/// elsewhere it polls.
public final class SpoolWatcher: Sendable {
    private let directory: URL
    private let pollInterval: Double
    /// Also report names leaving the folder (control/: `resume` deletes a pause request).
    private let removals: Bool
    /// Report closes of the folder's files instead of arrivals.
    private let closes: Bool
    private let queue = DispatchQueue(label: "pushspool.watcher")
    private let lock = Mutex<Void>(())
    /// Guarded by `lock` (Dispatch sources are not Sendable, but their cancel is thread-safe).
    nonisolated(unsafe) private var sources: [any DispatchSourceProtocol] = []

    public init(directory: URL, pollInterval: Double = 2, removals: Bool = false, closes: Bool = false) {
        self.directory = directory
        self.pollInterval = pollInterval
        self.removals = removals
        self.closes = closes
    }

    /// Starts watching; `onChange` runs on a private queue.
    public func start(_ onChange: @escaping @Sendable () -> Void) {
        let source = Self.makeNativeSource(directory, removals: removals, closes: closes, queue: queue, onChange) ?? makePollSource(onChange)
        lock.withLock { _ in sources.append(source) }
    }

    public func stop() {
        lock.withLock { _ in
            sources.forEach { $0.cancel() }
            sources.removeAll()
        }
    }

    private func makePollSource(_ onChange: @escaping @Sendable () -> Void) -> any DispatchSourceProtocol {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + pollInterval, repeating: pollInterval)
        timer.setEventHandler(handler: onChange)
        timer.resume()
        return timer
    }

    #if os(Linux)
    private static func makeNativeSource(_ dir: URL, removals: Bool, closes: Bool, queue: DispatchQueue,
                                         _ onChange: @escaping @Sendable () -> Void) -> (any DispatchSourceProtocol)? {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        let mask = closes ? UInt32(IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_MOVED_TO)
            : UInt32(IN_MOVED_TO | IN_CLOSE_WRITE) | (removals ? UInt32(IN_DELETE | IN_MOVED_FROM) : 0)
        guard inotify_add_watch(fd, dir.path, mask) >= 0 else {
            close(fd)
            return nil
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler {
            // Drain the non-blocking fd; which names changed does not matter (a rescan follows),
            // except that a close watch leaves out the folder's own (a listing of it, the
            // watcher's own owner's too) and hidden files'.
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            var sawEvent = false
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard n > 0 else { break }
                if !closes || buffer.withUnsafeBytes({ namesAVisibleFile(UnsafeRawBufferPointer(rebasing: $0[..<n])) }) { sawEvent = true }
            }
            if sawEvent { onChange() }
        }
        source.setCancelHandler { close(fd) }
        source.resume()
        return source
    }
    /// Whether inotify events (`struct inotify_event`, each a 16-byte header and `len` bytes of
    /// name) name a file in the folder whose name does not start with a dot, or say events were
    /// lost (the queue overflowed).
    private static func namesAVisibleFile(_ events: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset + 16 <= events.count {
            let mask = events.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
            let len = Int(events.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
            if mask & UInt32(IN_Q_OVERFLOW) != 0 { return true }
            if len > 0, offset + 16 < events.count, events[offset + 16] != 0, events[offset + 16] != UInt8(ascii: ".") { return true }
            offset += 16 + len
        }
        return false
    }
    #elseif canImport(Darwin)
    private static func makeNativeSource(_ dir: URL, removals: Bool, closes: Bool, queue: DispatchQueue,
                                         _ onChange: @escaping @Sendable () -> Void) -> (any DispatchSourceProtocol)? {
        // A vnode source does not see closes: polled.
        if closes { return nil }
        let fd = open(dir.path, O_EVTONLY)
        guard fd >= 0 else { return nil }
        let source = DispatchSource.makeFileSystemObjectSource(fileDescriptor: fd, eventMask: [.write, .rename], queue: queue)
        source.setEventHandler(handler: onChange)
        source.setCancelHandler { close(fd) }
        source.resume()
        return source
    }
    #else
    private static func makeNativeSource(_ dir: URL, removals: Bool, closes: Bool, queue: DispatchQueue,
                                         _ onChange: @escaping @Sendable () -> Void) -> (any DispatchSourceProtocol)? { nil }
    #endif
}
