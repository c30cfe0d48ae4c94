import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells a waiter when what is at one of some paths may have gone away or been replaced: the
/// path itself deleted or moved (`IN_DELETE_SELF`, `IN_MOVE_SELF`; a file still held open is
/// unlinked with an `IN_ATTRIB`, its link count), or a name created or moved into its folder.
/// Events are hints: the waiter looks (a `stat` of each path) and decides, so a wake-up for
/// another name in the same folder costs that look and nothing else.
///
/// Linux only (inotify); elsewhere, or where inotify cannot watch (the per-user limit of
/// instances), a poll every `pollInterval` seconds.
public final class PathChangeWatch: Sendable {
    private let queue = DispatchQueue(label: "pushspool.path-watch", qos: .utility)
    private let source: Mutex<(any DispatchSourceProtocol)?>

    /// Starts watching at once; `onChange` runs on a private queue.
    public init(paths: [String], pollInterval: Double = 2, _ onChange: @escaping @Sendable () -> Void) {
        let native = Self.makeNativeSource(paths, queue: queue, onChange)
        source = Mutex(native ?? Self.makePollSource(pollInterval, queue: queue, onChange))
    }

    public func stop() {
        source.withLock { s in
            s?.cancel()
            s = nil
        }
    }

    deinit { stop() }

    private static func makePollSource(_ interval: Double, queue: DispatchQueue,
                                       _ onChange: @escaping @Sendable () -> Void) -> any DispatchSourceProtocol {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler(handler: onChange)
        timer.resume()
        return timer
    }

    private static func makeNativeSource(_ paths: [String], queue: DispatchQueue,
                                         _ onChange: @escaping @Sendable () -> Void) -> (any DispatchSourceProtocol)? {
        #if os(Linux)
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        // IN_MASK_ADD: a folder that is both a watched path and another's parent keeps both masks.
        let itself = UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB | IN_MASK_ADD)
        let folder = UInt32(IN_CREATE | IN_MOVED_TO | IN_MASK_ADD)
        for path in paths {
            let parent = URL(fileURLWithPath: path).deletingLastPathComponent().path
            // A folder's IN_ATTRIB also reports its files' (a chmod, a touch): a folder is watched
            // without it, and is not unlinked while in use anyway.
            var isFolder: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isFolder)
            let mask = isFolder.boolValue ? itself & ~UInt32(IN_ATTRIB) : itself
            guard exists, inotify_add_watch(fd, path, mask) >= 0, inotify_add_watch(fd, parent, folder) >= 0 else {
                close(fd)
                return nil
            }
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler {
            // Drain the non-blocking fd; which event it was does not matter (the waiter looks).
            var buffer = [UInt8](repeating: 0, count: 4096)
            while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
            onChange()
        }
        source.setCancelHandler { close(fd) }
        source.resume()
        return source
        #else
        return nil
        #endif
    }
}
