import Dispatch
import PushspoolCore
import Synchronization

/// The HMS pushes handed over one at a time (a retry, a caller without a producer's `Handout`)
/// waiting to share a request: one batch per message (pushes whose bodies are the same but for
/// the token), up to `HMSNotification.maxTokensPerRequest` tokens, never a token twice. A full
/// batch leaves at once, the rest after a short gathering window. (A send job's producer fills
/// its own batches: `BatchingProvider`.)
final class HMSBatches: Sendable {
    struct Entry: Sendable {
        let token: String
        let completion: @Sendable (ProviderResult) -> Void
    }
    struct Batch: Sendable {
        let notification: HMSNotification
        var entries: [Entry] = []
        var tokens: Set<String> = []
    }
    private struct State {
        var batches: [[UInt8]: Batch] = [:]
        var timerArmed = false
    }
    private let state = Mutex(State())
    private let send: @Sendable (Batch) -> Void
    private let window: DispatchTimeInterval
    private let queue = DispatchQueue(label: "pushspool.hms.batches")

    /// `send` carries one batch (on the calling thread); `window`: how long a push waits for others.
    init(window: DispatchTimeInterval = .milliseconds(5), send: @escaping @Sendable (Batch) -> Void) {
        self.window = window
        self.send = send
    }

    /// Adds one push; it leaves with a full batch, or when the gathering window closes.
    func add(_ notification: HMSNotification, token: String, completion: @escaping @Sendable (ProviderResult) -> Void) {
        let key = notification.members.stamped(notification.id)
        var ready: [Batch] = []
        let arm = state.withLock { s -> Bool in
            // Out of the table while it grows (a copy left there would make each append copy it).
            var batch = s.batches.removeValue(forKey: key) ?? Batch(notification: notification)
            // A token twice in one request would be sent twice: the batch holding it leaves first.
            if batch.tokens.contains(token) {
                ready.append(batch)
                batch = Batch(notification: notification)
            }
            batch.entries.append(Entry(token: token, completion: completion))
            batch.tokens.insert(token)
            if batch.entries.count >= HMSNotification.maxTokensPerRequest {
                ready.append(batch)
            } else {
                s.batches[key] = batch
            }
            guard !s.timerArmed else { return false }
            s.timerArmed = true
            return true
        }
        for batch in ready { send(batch) }
        if arm {
            queue.asyncAfter(deadline: .now() + window) { [self] in
                state.withLock { $0.timerArmed = false }
                flush()
            }
        }
    }

    /// Sends every batch held.
    func flush() {
        let all = state.withLock { s -> [Batch] in
            defer { s.batches.removeAll(keepingCapacity: true) }
            return Array(s.batches.values)
        }
        for batch in all { send(batch) }
    }
}
