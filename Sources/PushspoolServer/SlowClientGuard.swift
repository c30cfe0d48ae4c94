import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A minimum transfer rate for requests: from the moment a connection waits for a request (it
/// opened, or its last answer went out) the request must arrive whole, head and body, within
/// `limitSeconds`, or the connection is cut off. libmicrohttpd's own timeout is for inactivity
/// only: a client trickling one byte every few seconds would hold its connection for ever, and
/// enough of them every connection the server has.
///
/// With `http.timeout_seconds` 30 and bodies of at most 64 KiB this asks about 2 KiB/s of a
/// client, far below any real one. An idle keep-alive connection is closed after the same time,
/// as the library's inactivity timeout would close it.
///
/// The connection is cut with `shutdown(2)` on its socket, under the lock that the library's
/// "closed" notice also takes, so the descriptor is still the connection's own: the library
/// then sees the end of the stream and closes the connection the usual way.
final class SlowClientGuard: @unchecked Sendable {
    // @unchecked: `timer` is set once in `init`; a Dispatch source may be cancelled from any thread.
    private struct Waiting {
        var fd: Int32
        /// Since when the connection waits for a request, or nil while one is being answered.
        var since: UInt64?
    }

    let limitSeconds: Double
    private let connections = Mutex<[UInt: Waiting]>([:])
    private let timer: any DispatchSourceTimer

    init(limitSeconds: Double) {
        self.limitSeconds = limitSeconds
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "pushspool.serve.slow-clients"))
        timer.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(200))
        timer.setEventHandler { [weak self] in self?.sweep() }
        timer.activate()
    }

    /// The server stopped: no more sweeps.
    func stop() { timer.cancel() }

    deinit { timer.cancel() }

    func opened(_ connection: OpaquePointer, fd: Int32) {
        let now = DispatchTime.now().uptimeNanoseconds
        connections.withLock { $0[key(connection)] = Waiting(fd: fd, since: now) }
    }

    func closed(_ connection: OpaquePointer) {
        _ = connections.withLock { $0.removeValue(forKey: key(connection)) }
    }

    /// The request is in (or refused early): its answer is not the client's to hurry.
    func arrived(_ connection: OpaquePointer) {
        connections.withLock { $0[key(connection)]?.since = nil }
    }

    /// The answer went out: the connection waits for the next request.
    func waiting(_ connection: OpaquePointer) {
        let now = DispatchTime.now().uptimeNanoseconds
        connections.withLock { $0[key(connection)]?.since = now }
    }

    /// How many connections are known (tests).
    var count: Int { connections.withLock { $0.count } }

    private func sweep() {
        let now = DispatchTime.now().uptimeNanoseconds
        let limit = UInt64(limitSeconds * 1e9)
        connections.withLock { map in
            for (k, w) in map {
                guard let since = w.since, now &- since > limit else { continue }
                _ = shutdown(w.fd, Int32(SHUT_RDWR))
                map[k]?.since = nil
            }
        }
    }

    private func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))) }
}
