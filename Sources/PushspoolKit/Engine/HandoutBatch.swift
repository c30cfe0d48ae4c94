import PushspoolCore
import Synchronization

/// A batch a producer's `Handout` fills for a `BatchingProvider` (one message, distinct members):
/// it holds one worker-pool slot, given back (`free`) once the batch has left and each target it
/// carried has ended. The handout holds it while it fills (`join` by each target, `leave` by
/// each target's end and once by the handout when it sends the batch).
final class HandoutBatch: Sendable {
    struct ID: Hashable, Sendable {
        let provider: ObjectIdentifier
        let message: [UInt8]
    }
    let id: ID
    let provider: any BatchingProvider
    /// The handout's hold, and one per target that joined and has not ended.
    private let holders = Atomic<Int>(1)
    private let free: @Sendable () -> Void

    init(provider: any BatchingProvider, message: [UInt8], free: @escaping @Sendable () -> Void) {
        self.provider = provider
        id = ID(provider: ObjectIdentifier(provider), message: message)
        self.free = free
    }

    /// A target joins: the slot stays taken until it ends.
    func join() { holders.add(1, ordering: .relaxed) }

    /// A target ended (its outcome written), or the handout sent the batch.
    func leave() {
        if holders.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { free() }
    }
}
