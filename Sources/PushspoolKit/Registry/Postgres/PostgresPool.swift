import Dispatch
import Foundation
import Synchronization

/// The PostgreSQL connections of one process (`registry_connections` of them at most), shared by
/// every part that talks to the database: the registry, the job queue, the shared rate buckets,
/// pauses and credentials. A thread borrows one for the length of `withConnection` (waiting while
/// all are lent); connections are opened on demand and one the server dropped is discarded, so
/// the next borrower reconnects: a database restart costs the statements that were running at
/// that moment, nothing more.
///
/// The queue's `LISTEN` needs a connection of its own for as long as it listens
/// (`openDedicated`): it takes one of the slots, so the process never holds more than
/// `maxConnections` connections in all. A part never borrows a second connection while it holds
/// one (each method runs its statements on one): with one pool, that could wait for ever.
///
/// Closing the pool (`close`, by whoever made it: the registry that owns it) fails every later
/// borrow; a pool no one holds any more closes its idle connections as it goes.
public final class PostgresPool: Sendable {
    let uri: String
    /// Connections at most, dedicated ones included.
    public let maxConnections: Int
    private let state = Mutex<State>(State())
    private let slots: DispatchSemaphore
    /// Told once when the database becomes unreachable and once when it answers again.
    private let onAvailabilityChange: @Sendable (_ reachable: Bool, _ detail: String) -> Void

    private struct State {
        var idle: [PostgresConnection] = []
        var closed = false
        var unreachable = false
    }

    /// Statements each new connection runs first (session settings).
    private let setup: [String]

    init(uri: String, maxConnections: Int = 4, setup: [String] = [],
         onAvailabilityChange: @escaping @Sendable (Bool, String) -> Void = { _, _ in }) {
        self.uri = uri
        self.setup = setup
        self.maxConnections = max(1, maxConnections)
        slots = DispatchSemaphore(value: self.maxConnections)
        self.onAvailabilityChange = onAvailabilityChange
    }

    /// Runs `body` with a connection of its own. A connection the server dropped during `body`
    /// is closed rather than returned. `waitingAtMost`: how long to wait while all are lent
    /// (nil: as long as it takes).
    func withConnection<T>(waitingAtMost seconds: Double? = nil, _ body: (PostgresConnection) throws -> T) throws -> T {
        if let seconds {
            guard slots.wait(timeout: .now() + seconds) == .success else {
                throw RegistryError("all \(maxConnections) connections stayed busy for \(seconds) s")
            }
        } else {
            slots.wait()
        }
        defer { slots.signal() }
        let reused = try state.withLock { s throws(RegistryError) -> PostgresConnection? in
            if s.closed { throw RegistryError("registry is closed") }
            return s.idle.popLast()
        }
        let connection: PostgresConnection
        // An idle connection the server closed meanwhile (a restart) said so on its socket: it
        // is replaced now, not found out by the statement it would have failed.
        if let reused, reused.isStillOpen {
            connection = reused
        } else {
            reused?.close()
            do {
                connection = try PostgresConnection(uri: uri)
                for statement in setup { try connection.execute(statement) }
            } catch {
                noteReachable(false, error.message)
                throw error
            }
        }
        do {
            let value = try body(connection)
            giveBack(connection)
            noteReachable(true, "")
            return value
        } catch {
            if connection.isHealthy {
                giveBack(connection)
            } else {
                connection.close()
                // The others idle since before it are most likely gone too.
                let idle = state.withLock { s in
                    defer { s.idle.removeAll() }
                    return s.idle
                }
                idle.forEach { $0.close() }
                noteReachable(false, (error as? PostgresError)?.message ?? "\(error)")
            }
            throw error
        }
    }

    private func giveBack(_ connection: PostgresConnection) {
        let keep = state.withLock { s -> Bool in
            if s.closed { return false }
            s.idle.append(connection)
            return true
        }
        if !keep { connection.close() }
    }

    private func noteReachable(_ reachable: Bool, _ detail: String) {
        let changed = state.withLock { s -> Bool in
            guard s.unreachable == reachable else { return false }
            s.unreachable = !reachable
            return true
        }
        if changed { onAvailabilityChange(reachable, detail) }
    }

    /// A connection of its own, outside the idle ones, taking one slot until
    /// `closeDedicated` gives it back: the queue's `LISTEN`, which must stay on one connection.
    /// Waits while every slot is lent.
    func openDedicated() throws -> PostgresConnection {
        slots.wait()
        do {
            try state.withLock { s throws(RegistryError) in if s.closed { throw RegistryError("registry is closed") } }
            let connection = try PostgresConnection(uri: uri)
            for statement in setup { try connection.execute(statement) }
            return connection
        } catch {
            slots.signal()
            throw error
        }
    }

    /// Closes a connection `openDedicated` gave and frees its slot.
    func closeDedicated(_ connection: PostgresConnection) {
        connection.close()
        slots.signal()
    }

    /// Closes idle connections; borrowed ones close when given back. Idempotent.
    func close() {
        let idle = state.withLock { s -> [PostgresConnection] in
            s.closed = true
            defer { s.idle.removeAll() }
            return s.idle
        }
        idle.forEach { $0.close() }
    }
}
