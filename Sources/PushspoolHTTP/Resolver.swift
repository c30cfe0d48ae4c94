import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `getaddrinfo` within a deadline. The call itself cannot be interrupted (a resolver that does
/// not answer holds it for its own timeouts, 5 s × attempts × servers), so it runs on a thread
/// of its own and the caller waits only until the connect deadline: past it the connect fails
/// as a timeout, and the late answer is freed by that thread when it comes.
enum Resolver {
    /// A resolved list, freed when the last reference goes.
    final class Addresses: @unchecked Sendable {
        // @unchecked: `list` is written once, before the result is handed over.
        let list: UnsafeMutablePointer<addrinfo>?
        init(_ list: UnsafeMutablePointer<addrinfo>?) { self.list = list }
        deinit { if let list { freeaddrinfo(list) } }
    }

    private final class Pending: Sendable {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<Addresses, HTTPTransportError>?>(nil)
    }

    /// Addresses of `host` for stream sockets of any family.
    static func resolve(_ host: String, port: Int, until deadline: Double) throws(HTTPTransportError) -> Addresses {
        // An address literal needs no resolver: no thread.
        if TLSSocket.isIPAddress(host) { return try lookup(host, port).get() }
        // No time left: no lookup is started (one that happened to finish before the check
        // would otherwise be used or not by the scheduler's whim).
        guard deadline > monotonicNow() else { throw HTTPTransportError("resolving \(host) timed out") }
        let pending = Pending()
        let thread = Thread {
            pending.result.withLock { $0 = lookup(host, port) }
            pending.done.signal()
        }
        thread.name = "pushspool-resolve"
        thread.start()
        let left = max(0, deadline - monotonicNow())
        guard pending.done.wait(timeout: .now() + left) == .success, let result = pending.result.withLock({ $0 }) else {
            throw HTTPTransportError("resolving \(host) timed out")
        }
        return try result.get()
    }

    private static func lookup(_ host: String, _ port: Int) -> Result<Addresses, HTTPTransportError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0 else {
            return .failure(HTTPTransportError("cannot resolve \(host): \(String(cString: gai_strerror(rc)))"))
        }
        return .success(Addresses(list))
    }
}
