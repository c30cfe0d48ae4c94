import Foundation
import PushspoolCore

// A chunk's life, 6: its holder lets it go unfinished (a stop, a pause, a cancel).
extension PostgresJobQueue {
    /// Lets go of a chunk left unfinished (a stop, a pause, a cancel): any host may take it at
    /// once. Only under a live lease (`ChunkLease`): a lapsed one is anyone's already.
    public func release(_ chunk: Chunk) throws(RegistryError) {
        try transaction { c in
            try c.query("""
                UPDATE queue_chunks SET host = NULL, lease_until = NULL
                WHERE job = $1 AND chunk = $2::int AND host = $3 AND taken = $4::int AND NOT done AND lease_until > clock_timestamp()
                """, [chunk.job, "\(chunk.number)", host, "\(chunk.taken)"])
            try c.query("SELECT pg_notify($1, $2)", [Self.channel, "released " + chunk.job])
        }
    }
}
