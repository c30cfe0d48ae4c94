#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The calling thread's identity, as a plain number (so closures can carry it across threads).
enum ThreadID {
    static var current: UInt64 {
        #if canImport(Darwin)
        var id: UInt64 = 0
        pthread_threadid_np(nil, &id)
        return id
        #else
        return UInt64(pthread_self())
        #endif
    }
}
