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
public final class SpoolWatcher: Sendable {
    private let directory: URL
    private let pollInterval: Double
    /// Also report names leaving the folder (control/: `resume` deletes a pause request).
    private let removals: Bool
    private let queue = DispatchQueue(label: "pushspool.watcher")
    private let lock = Mutex<Void>(())
    /// Guarded by `lock` (Dispatch sources are not Sendable, but their cancel is thread-safe).
    nonisolated(unsafe) private var sources: [any DispatchSourceProtocol] = []

    public init(directory: URL, pollInterval: Double = 2, removals: Bool = false) {
        self.directory = directory
        self.pollInterval = pollInterval
        self.removals = removals
    }

    /// Starts watching; `onChange` runs on a private queue.
    public func start(_ onChange: @escaping @Sendable () -> Void) {
        let source = Self.makeNativeSource(directory, removals: removals, queue: queue, onChange) ?? makePollSource(onChange)
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
    private static func makeNativeSource(_ dir: URL, removals: Bool, queue: DispatchQueue, _ onChange: @escaping @Sendable () -> Void) -> (any DispatchSourceProtocol)? {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        let mask = UInt32(IN_MOVED_TO | IN_CLOSE_WRITE) | (removals ? UInt32(IN_DELETE | IN_MOVED_FROM) : 0)
        guard inotify_add_watch(fd, dir.path, mask) >= 0 else {
            close(fd)
            return nil
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler {
            // Drain the non-blocking fd; which names changed does not matter (a rescan follows).
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            var sawEvent = false
            while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 { sawEvent = true }
            if sawEvent { onChange() }
        }
        source.setCancelHandler { close(fd) }
        source.resume()
        return source
    }
    #elseif canImport(Darwin)
    private static func makeNativeSource(_ dir: URL, removals: Bool, queue: DispatchQueue, _ onChange: @escaping @Sendable () -> Void) -> (any DispatchSourceProtocol)? {
        let fd = open(dir.path, O_EVTONLY)
        guard fd >= 0 else { return nil }
        let source = DispatchSource.makeFileSystemObjectSource(fileDescriptor: fd, eventMask: [.write, .rename], queue: queue)
        source.setEventHandler(handler: onChange)
        source.setCancelHandler { close(fd) }
        source.resume()
        return source
    }
    #else
    private static func makeNativeSource(_ dir: URL, removals: Bool, queue: DispatchQueue, _ onChange: @escaping @Sendable () -> Void) -> (any DispatchSourceProtocol)? { nil }
    #endif
}
