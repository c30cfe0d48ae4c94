import PushspoolKit
import Synchronization

/// A log handler keeping every event in memory, for tests that check what was logged.
public final class CollectingLogHandler: LogHandler {
    private let store = Mutex<[LogEvent]>([])
    public init() {}
    public func emit(_ event: LogEvent) { store.withLock { $0.append(event) } }
    public var events: [LogEvent] { store.withLock { $0 } }
}
