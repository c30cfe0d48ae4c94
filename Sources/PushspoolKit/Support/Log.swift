import Foundation
import Synchronization

/// Line-oriented logging to stderr. Never pass credentials (tokens, keys, secrets, handles) here.
public final class Log: Sendable {
    public enum Level: Int, Sendable, Comparable {
        case debug, info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var label: String { ["debug", "info", "warning", "error"][rawValue] }
    }

    public let minimum: Level
    private let lock = Mutex<Void>(())

    public init(minimum: Level = .info) { self.minimum = minimum }

    public static let shared = Log(minimum: ProcessInfo.processInfo.environment["PUSHSPOOL_DEBUG"] != nil ? .debug : .info)

    public func log(_ level: Level, _ message: @autoclosure () -> String) {
        guard level >= minimum else { return }
        let line = "pushspool: \(level.label): \(message())\n"
        lock.withLock { _ in FileHandle.standardError.write(Data(line.utf8)) }
    }

    public func debug(_ m: @autoclosure () -> String) { log(.debug, m()) }
    public func info(_ m: @autoclosure () -> String) { log(.info, m()) }
    public func warning(_ m: @autoclosure () -> String) { log(.warning, m()) }
    public func error(_ m: @autoclosure () -> String) { log(.error, m()) }
}
