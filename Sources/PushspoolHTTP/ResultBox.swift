import Dispatch
import Synchronization

/// A one-shot value handed from a completion handler to a waiting thread.
public final class ResultBox<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    public init() {}

    public func set(_ v: Value) {
        value.withLock { $0 = v }
        ready.signal()
    }

    public func wait() -> Value {
        ready.wait()
        return value.withLock { $0! }
    }
}
