import PushspoolCore

/// `pushspool fcm topics subscribe|unsubscribe`: one app's FCM devices matching a tag expression,
/// streamed from the registry and (un)subscribed to a topic through the Instance ID batch API,
/// `FCMTopicBatch.maxTokens` tokens per request. A device whose token the service says is gone
/// (`NOT_FOUND`) is removed from the registry, as a send's `UNREGISTERED` is.
public struct FCMTopicSubscription {
    public struct Tally: Sendable {
        public var done = 0, requests = 0, removed = 0
        /// Devices the service refused, by reason.
        public var failed: [String: Int] = [:]
        /// A request that failed for good (the service unreachable, the credentials refused).
        public var requestFailure: String?
    }

    let provider: FCMProvider
    let registry: any DeviceRegistry
    let policy: RetryPolicy

    public init(provider: FCMProvider, registry: any DeviceRegistry, policy: RetryPolicy) {
        self.provider = provider
        self.registry = registry
        self.policy = policy
    }

    /// `refused` hears of each device the service refused (its reason); `pruneFailed` of gone
    /// devices the registry could not remove (how many, why). Throws when the registry cannot be read.
    public func run(_ action: FCMTopicBatch.Action, topic: String, app: String, matching: TagExpression?,
                    refused: (Device, String) -> Void, pruneFailed: (Int, String) -> Void) throws -> Tally {
        var tally = Tally()
        var batch: [Device] = []
        func flush() {
            let (errors, requests, failure) = provider.topicBatch(action, topic: topic, tokens: batch.map(\.handle), policy: policy)
            tally.requests += requests
            if let failure { tally.requestFailure = failure }
            var gone: [GoneDevice] = []
            for (device, error) in zip(batch, errors) {
                guard let error else { tally.done += 1; continue }
                tally.failed[error, default: 0] += 1
                refused(device, error)
                if FCMTopicBatch.isGone(error) { gone.append(GoneDevice(id: device.id, handle: device.handle, since: nil)) }
            }
            if !gone.isEmpty {
                do { tally.removed += try registry.removeGone(gone) } catch { pruneFailed(gone.count, RegistryError.detail(error)) }
            }
            batch.removeAll(keepingCapacity: true)
        }
        try registry.forEach(platforms: [.fcm], apps: [app], matching: matching) { device in
            batch.append(device)
            if batch.count == FCMTopicBatch.maxTokens { flush() }
            return true
        }
        if !batch.isEmpty { flush() }
        return tally
    }
}
