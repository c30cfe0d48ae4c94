import Foundation
import PushspoolCore

/// Taking over a chunk whose holder's lease ran out (a host that died, stalled or was cut off
/// from the database), in one place:
///
/// - **When**: nothing tells of a lease running out, so each host asks the queue when the
///   earliest lease another host holds ends (`PostgresJobQueue.nextLapse`) and arms its
///   `QueueAlarm` for just after (`ChunkWorker.claimMore`).
/// - **How**: `PostgresJobQueue.claim` picks open and lapsed chunks alike (`FOR UPDATE SKIP
///   LOCKED`, never a live lease) and returns what each row was before; `previousHolder` asks
///   `ChunkLease` whether that claim was a take-over, and names the lapsed holder.
/// - **Then**: the new holder reads back what the lapsed one recorded (final: under the row's
///   lock, a lapsed holder's batch either went in before the claim or is refused, see
///   `PostgresJobQueue.record`), sends the rest of the chunk's targets, and says so in the log
///   (`announce`).
enum TakeOver {
    /// The holder a claim took the chunk over from, or nil when the chunk was open (new, or let
    /// go). `previousHost`, `previousTaken`: the row's holder before the claim (a lapsed one: a
    /// live lease is never picked); `holder`: the claim's own (`PostgresJobQueue.holder`).
    static func previousHolder(host previousHost: String?, taken previousTaken: Int, claimedBy holder: String) -> String? {
        let before = ChunkLease<String>(done: false, holder: previousHost.map { PostgresJobQueue.holder(host: $0, taken: previousTaken) },
                                        leaseRuns: false)
        if case .tookOver(let previous) = before.on(.claim(as: holder)).effect { return previous }
        return nil
    }

    /// Said in the log: a take-over means a host stalled or was cut off.
    static func announce(_ chunk: PostgresJobQueue.Chunk, log: Log) {
        guard let previous = chunk.tookOverFrom else { return }
        log.info("took over chunk \(chunk.number) from \(previous), whose lease ran out", [(.job, chunk.job)])
    }
}

extension PostgresJobQueue {
    /// Seconds until the earliest lease another holder has on a chunk (or a cut) of a job
    /// neither paused nor cancelled runs out, when this host may take it over; nil: no lease
    /// runs. `ownOnly`: of jobs this origin published. A host sleeps until then (or the next
    /// notification): a lease that runs out tells no one.
    public func nextLapse(ownOnly: Bool = false) throws(RegistryError) -> Double? {
        try run { c in
            let r = try c.query("""
                SELECT extract(epoch from least(
                    (SELECT min(q.lease_until) FROM queue_chunks q JOIN queue_jobs j ON j.id = q.job
                     WHERE NOT q.done AND q.lease_until > clock_timestamp() AND q.host <> $1 AND j.control IS NULL
                       AND ($2::text IS NULL OR j.origin = $2)),
                    (SELECT min(cut_lease_until) FROM queue_jobs
                     WHERE NOT cut_done AND control IS NULL AND cut_lease_until > clock_timestamp() AND cutter <> $1
                       AND ($2::text IS NULL OR origin = $2))
                ) - clock_timestamp())
                """, [host, ownOnly ? origin : nil])
            return r.isNull(0, 0) ? nil : max(0, r.double(0, 0))
        }
    }
}
