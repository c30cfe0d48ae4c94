import Foundation
import PushspoolCore

/// Waits for the queue's notifications on a connection of its own (`LISTEN pushspool_queue`),
/// reconnecting with backoff when the database goes away. It sleeps in `poll(2)` on the
/// connection's socket and on its `stop()`: a notification or a stop wakes it at once, nothing
/// else does until the quiet `timeout`. Its connection is one of the process's pool
/// (`PostgresPool.openDedicated`): the pool's size counts it.
public final class QueueListener: Sendable {
    private let pool: PostgresPool
    private let stopped = StopEvent()
    /// The host whose presence its connection holds (`PostgresJobQueue.presenceLock`), if any.
    private let presence: String?

    init(pool: PostgresPool, presence: String? = nil) {
        self.pool = pool
        self.presence = presence
    }

    /// On a pool of one connection of its own (a test's second host).
    public convenience init(uri: String) { self.init(pool: PostgresPool(uri: uri, maxConnections: 1)) }

    /// Ends `listen` at once (from any thread).
    public func stop() { stopped.set() }

    /// Calls `heard` with each notification's payload (and with nil when it (re)connected, as
    /// anything said meanwhile was missed, and after each `timeout` of silence when one is
    /// given) until `stop()`, or until `stop` says so when it is next asked (after a
    /// notification or a quiet `timeout`). With no `timeout` it makes no statement and no
    /// wake-up while nothing is said: the socket's keepalives find a dead connection.
    public func listen(timeout: Double = .infinity, stop: @Sendable () -> Bool = { false }, _ heard: @Sendable (String?) -> Void) {
        var connection: PostgresConnection?
        var backoff = 0.25
        var quietSince = Uptime.seconds
        while !stop(), !stopped.isSet {
            do {
                if connection == nil {
                    let c = try pool.openDedicated()
                    do {
                        try c.execute("LISTEN \(PostgresJobQueue.channel)")
                        if let presence { try PostgresJobQueue.presenceLock(presence, on: c) }
                    } catch {
                        pool.closeDedicated(c)
                        throw error
                    }
                    connection = c
                    backoff = 0.25
                    heard(nil)    // reconnected: anything said meanwhile was missed
                    quietSince = Uptime.seconds
                }
                let payloads = try connection!.notifications(timeout: timeout - (Uptime.seconds - quietSince), stop: stopped)
                if stopped.isSet { break }
                if payloads.isEmpty {
                    guard Uptime.seconds - quietSince >= timeout else { continue }
                    heard(nil)
                } else {
                    for p in payloads { heard(p) }
                }
                quietSince = Uptime.seconds
            } catch {
                if let connection { pool.closeDedicated(connection) }
                connection = nil
                heard(nil)
                stopped.wait(seconds: min(backoff, timeout, 5))
                backoff = min(backoff * 2, 5)
            }
        }
        if let connection { pool.closeDedicated(connection) }
    }
}
