import Foundation
import PushspoolCore

/// A registry several hosts share (`PostgresRegistry`), as the parts of one process that work
/// with the other hosts find it (`DeviceRegistry.shared`, never a cast to the concrete type):
/// the queue (`SharedQueue`), the shared rate buckets, provider pauses and credentials
/// (`EngineSetup`) all borrow the connections of its one pool, so a process holds at most
/// `registry_connections` connections to the database, the queue's `LISTEN` included.
public protocol SharedRegistry: RegistryDatabase {
    /// The process's connections to the database; the registry made it and closes it.
    var pool: PostgresPool { get }

    /// Where the next chunk of an audience ends, for the queue's cutter: the `seq` of the
    /// `size`-th matching device after `after`, or of the last one when fewer are left; nil
    /// when none is.
    func chunkEnd(platforms: Set<Platform>, apps: Set<String>?, tokenKind: APNsTokenKind?, matching: TagExpression?,
                  after: Int64, size: Int) throws(RegistryError) -> Int64?

    /// nil when one of the pool's connections answers within `timeout` seconds, else why not
    /// (one line, redacted): `/healthz` and the dashboard, without a connection made per check.
    func ping(timeout: Double) -> String?
}
