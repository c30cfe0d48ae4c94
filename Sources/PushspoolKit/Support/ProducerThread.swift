#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Marks the thread of a send job that hands out targets (its producer) while it does so.
///
/// A provider that answers at once (the sandbox) may hold a request, its output and its answer
/// when called on a producer thread, because the producer promises to `flush` before it waits for
/// anything (a free slot, the provider's rate cap, its own pacing) and when it is done: the targets
/// handed out between two waits then share one `write(2)` of the outbox and one of the result log.
/// Any other thread (a retry timer, a transport's queue) is not marked: its output is written at
/// once, since nobody would flush it.
enum ProducerThread {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Whether the calling thread is a producer inside `run`.
    static var isCurrent: Bool { pthread_getspecific(key) != nil }

    /// Runs `body` with the calling thread marked as a producer.
    static func run<T>(_ body: () throws -> T) rethrows -> T {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(key, previous) }
        return try body()
    }
}
