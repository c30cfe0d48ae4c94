/// A provider with no service to wait for, that answers as it sends (the sandbox).
///
/// A send job's producer has each request prepared as it hands it out (`prepare`: the work that
/// needs the request, such as encoding it), holds only what that made, and hands the provider
/// everything it held between two of its waits in one call (`send(prepared:)`), getting their
/// answers back, in order, when the call returns: they share one write, and no answer crosses to
/// another thread (a hand-off per request doubled the CPU of a sandbox broadcast).
/// `send(_:completion:)` stays for a single request (a retry); it is the same as a batch of one.
public protocol ImmediateProvider: PushProvider {
    func prepare(_ request: SendRequest) -> PreparedSend
    /// Sends `prepared` together and returns one answer per item, in their order.
    func send(prepared: [PreparedSend]) -> [ProviderResult]
}

extension ImmediateProvider {
    /// Prepares and sends `requests` together.
    public func send(batch requests: [SendRequest]) -> [ProviderResult] { send(prepared: requests.map(prepare)) }
}

/// A request as an `ImmediateProvider` prepared it: what to write where, or its answer already
/// (a request the provider refuses without writing anything).
public struct PreparedSend: Sendable {
    public var platform: Platform
    public var bytes: [UInt8]
    public var answer: ProviderResult?

    public init(platform: Platform, bytes: [UInt8] = [], answer: ProviderResult? = nil) {
        self.platform = platform
        self.bytes = bytes
        self.answer = answer
    }
}
