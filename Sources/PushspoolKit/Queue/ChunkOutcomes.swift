import Dispatch
import Foundation
import PushspoolCore
import Synchronization

/// Writes the outcome batches of every chunk this host sends, those that wait together in one
/// statement and one commit (`PostgresJobQueue.record`). Each chunk's recorder waits for its
/// batch to be in (its requests' slots stay taken until then); while one write runs, the
/// batches of all chunks gather for the next. A commit per batch per chunk was the queue's main
/// cost in the database: grouped, a host makes about one commit per round trip, however many
/// chunks it holds. No thread of its own: the recorder that finds no write running writes, and
/// hands the next write to the first batch that came meanwhile (a wake-up less per write).
final class OutcomeWriter: Sendable {
    private final class Batch: Sendable {
        let chunk: PostgresJobQueue.Chunk
        let lines: [UInt8]
        /// Signalled once: with its result, or to write the next group itself.
        let woken = DispatchSemaphore(value: 0)
        let result = Mutex<Result<Int64?, RegistryError>?>(nil)
        init(_ chunk: PostgresJobQueue.Chunk, _ lines: [UInt8]) {
            self.chunk = chunk
            self.lines = lines
        }
    }

    private let store: PostgresJobQueue
    private let pending = Mutex<(batches: [Batch], writing: Bool)>(([], false))

    init(store: PostgresJobQueue) { self.store = store }

    /// Appends one batch of a chunk's lines once the current write is done, with whatever other
    /// chunks' batches wait then; the row it became, or nil: this host no longer holds the
    /// chunk (lines dropped).
    func record(_ chunk: PostgresJobQueue.Chunk, lines: [UInt8]) throws(RegistryError) -> Int64? {
        let batch = Batch(chunk, lines)
        let leads = pending.withLock { p -> Bool in
            p.batches.append(batch)
            defer { p.writing = true }
            return !p.writing
        }
        if !leads { batch.woken.wait() }
        if batch.result.withLock({ $0 == nil }) { write(leader: batch) }
        return try batch.result.withLock { $0! }.get()
    }

    /// Writes every batch waiting (the leader's among them), then wakes their recorders and
    /// hands the next write to the first batch that came meanwhile, if any.
    private func write(leader: Batch) {
        let group = pending.withLock { p -> [Batch] in
            defer { p.batches = [] }
            return p.batches
        }
        let outcome: Result<[PostgresJobQueue.Chunk: Int64], RegistryError>
        do { outcome = .success(try store.record(group.map { ($0.chunk, $0.lines) })) } catch { outcome = .failure(error) }
        for batch in group { batch.result.withLock { $0 = outcome.map { $0[batch.chunk] } } }
        let next = pending.withLock { p -> Batch? in
            if p.batches.isEmpty { p.writing = false }
            return p.batches.first
        }
        next?.woken.signal()
        for batch in group where batch !== leader { batch.woken.signal() }
    }
}

/// A chunk's outcome lines go to the queue, a batch per row (through this host's
/// `OutcomeWriter`), while this host still holds the chunk; once it does not (taken over, or
/// the database is gone), writing fails and the run stops, as on a full disk.
final class ChunkOutcomeLog: OutcomeLog {
    private let writer: OutcomeWriter
    private let chunk: PostgresJobQueue.Chunk
    private let held: ChunkWorker.Held
    private let state = Mutex<(size: Int64, failure: String?)>((0, nil))
    /// Whether `failure` is set: asked before every target, an atomic load until it is.
    private let failed = Atomic<Bool>(false)
    /// Told how many outcomes each write recorded (this host's rate in `status`), and when the
    /// database cannot be reached: then every chunk of this host stops at once (their outcomes
    /// could not be recorded either), not each one at its own next write.
    private let recorded: @Sendable (Int) -> Void
    private let unreachable: @Sendable (any Error) -> Void

    /// The job's log, when this process is the job's origin and follows it (each recorded
    /// batch is written there too, not read back from the queue).
    private let origin: @Sendable () -> OriginLog?

    init(writer: OutcomeWriter, chunk: PostgresJobQueue.Chunk, held: ChunkWorker.Held, origin: @escaping @Sendable () -> OriginLog?,
         recorded: @escaping @Sendable (Int) -> Void, unreachable: @escaping @Sendable (any Error) -> Void) {
        self.writer = writer
        self.origin = origin
        self.chunk = chunk
        self.held = held
        self.recorded = recorded
        self.unreachable = unreachable
    }

    func append(line bytes: [UInt8]) { append(bytes, counted: nil) }

    func append(outcomes bytes: [UInt8], counted: LogPosition) { append(bytes, counted: counted) }

    private func append(_ bytes: [UInt8], counted: LogPosition?) {
        guard failure == nil, !bytes.isEmpty else { return }
        let note: String?
        do {
            if let row = try writer.record(chunk, lines: bytes) {
                note = nil
                _ = origin()?.take(chunk: chunk.number, row: row, lines: bytes, counted: counted)
                recorded(counted.map { $0.delivered + $0.failed + $0.unregistered + $0.capped }
                         ?? bytes.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 })
            } else {
                note = "the chunk was taken over by another host"
                held.lose()
            }
        } catch {
            // The run stops; the chunk is let go, or its lease runs out while the database is away.
            note = "the queue could not record outcomes: \(RegistryError.detail(error))"
            unreachable(error)
        }
        state.withLock { s in
            if let note {
                s.failure = s.failure ?? note
                failed.store(true, ordering: .releasing)
            } else {
                s.size += Int64(bytes.count)
            }
        }
    }

    var failure: String? { failed.load(ordering: .acquiring) ? state.withLock { $0.failure } : nil }
    var size: Int64 { state.withLock { $0.size } }
    func restoreIfDeleted() -> String? { nil }
}
