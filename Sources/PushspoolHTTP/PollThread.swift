import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What both transports' poll threads share: the wakeup, the serial queue completions run on (one
/// hop per batch, so slow completion work never stalls the sockets), and a stop that waits for
/// the loop to exit and for the completions already handed out — unless called from one of them.
final class PollThread: Sendable {
    let wakeup: Wakeup
    private let exited = DispatchSemaphore(value: 0)
    private let thread = Mutex<pthread_t?>(nil)
    private let completions: DispatchQueue
    private let onCompletionQueue = DispatchSpecificKey<Bool>()

    init(label: String) throws(HTTPTransportError) {
        wakeup = try Wakeup()
        completions = DispatchQueue(label: label + ".completions")
        completions.setSpecific(key: onCompletionQueue, value: true)
    }

    /// Called first thing on the poll thread.
    func loopStarted() { thread.withLock { $0 = pthread_self() } }

    /// Called last thing on the poll thread.
    func loopExited() { exited.signal() }

    func complete(_ work: @escaping @Sendable () -> Void) { completions.async(execute: work) }

    /// After the owner has marked itself stopping: wakes the loop and waits as described above.
    func awaitStop() {
        wakeup.signal()
        let onLoop = thread.withLock { id in id.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        if !onLoop { exited.wait() }
        if DispatchQueue.getSpecific(key: onCompletionQueue) != true { completions.sync {} }
    }
}
