/// A provider with no service to wait for, that answers as it sends (the sandbox).
///
/// A send job's producer hands such a provider the requests it sends between two of its waits
/// in one call and gets their answers back, in order, when the call returns: they share one
/// write, and no answer crosses to another thread (a hand-off per request doubled the CPU of a
/// sandbox broadcast). `send(_:completion:)` stays for a single request (a retry); it is the
/// same as a batch of one.
public protocol ImmediateProvider: PushProvider {
    /// Sends `requests` together and returns one answer per request, in their order.
    func send(batch requests: [SendRequest]) -> [ProviderResult]
}
