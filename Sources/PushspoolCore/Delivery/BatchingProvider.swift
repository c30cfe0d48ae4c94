/// A provider whose one request carries many targets of one message (HMS: up to 1,000 tokens).
///
/// A send job's producer gathers its targets into batches in its `Handout`: one worker-pool slot
/// (and one turn of the provider's rate cap) per batch, not per target, so a batch fills to
/// `maxBatch` at any concurrency. A full batch leaves at once, the others when the producer
/// releases its handout (before it waits for anything, and when it is done). Each target keeps
/// its own answer. A request that cannot be batched (`batchKey` nil) goes through `send`, as do
/// retries, which leave the producer (a provider gathers those itself, by a short window).
public protocol BatchingProvider: PushProvider {
    /// Most targets one request carries.
    var maxBatch: Int { get }
    /// Which batch `request` may join: requests with the same `message` share a request, and no
    /// two in one request have the same `member` (a token sent twice). nil: it goes alone.
    func batchKey(_ request: SendRequest) -> BatchKey?
    /// Sends `requests` (one message, distinct members, at most `maxBatch`) as one request and
    /// calls `answers[i]` once with the answer for `requests[i]`, on any thread.
    func send(batch requests: [SendRequest], answers: [@Sendable (ProviderResult) -> Void])
}

/// Where a request goes in its provider's batches (`BatchingProvider.batchKey`).
public struct BatchKey: Sendable {
    /// What the requests of one batch share (the message's bytes, without the target).
    public var message: [UInt8]
    /// What no two requests of one batch may share (the target: a token).
    public var member: String

    public init(message: [UInt8], member: String) {
        self.message = message
        self.member = member
    }
}
