import Foundation
import PushspoolCore

/// One listing of `incoming/` turned into what the dispatcher does next: the jobs due now (a
/// bounded batch, oldest first), the ones that wait (`not_before` ahead, paused, or still being
/// written), when the earliest of those is due, and what is there that is not a job.
///
/// A flood is taken batch by batch: each listing keeps only the `batchSize` oldest candidates
/// (`FolderScan`), and only those are read — one JSON parse each, once per file version — so
/// neither memory nor a listing's work grows with the backlog beyond one name at a time. Files
/// known to wait (their version unchanged) stay out of the batch, so jobs scheduled for later
/// never crowd out the ones due now.
struct IncomingPlan {
    /// What a peek found in a waiting file, kept by name so each file version is read once.
    struct Peeked: Sendable {
        var version: FileIO.Version
        var notBefore: Date?
        var id: String?
        /// Not whole JSON yet and changed moments ago: a writer that skipped tmp/ + rename may
        /// still be writing it (`notBefore` is then 2 s after its last change).
        var settling = false
    }

    /// A file that is not whole JSON and changed within this is looked at again this long after
    /// its last change, instead of being claimed half-written and quarantined.
    static let settleSeconds = 2.0
    /// Jobs claimed from one listing; the folder is listed again when they are used up.
    static let batchSize = 4096
    /// Waiting files remembered between listings (beyond that they are peeked again each time:
    /// more reads, never more memory).
    static let rememberedLimit = 50_000

    /// Due now, oldest first.
    var due: [String] = []
    /// The peeks to remember for the next listing: waiting files and this batch.
    var peeked: [String: Peeked] = [:]
    /// When the earliest waiting file is due (scheduled or settling).
    var nextDue: Date?
    /// When the last settling file will have settled (nil: none is settling).
    var settledBy: Date?
    var unsafe: [SpoolName] = []
    /// Jobs in the folder (the batch and the rest) and the oldest one's modification time.
    var jobs = 0
    var oldestModified: Double?
    var strays = 0
    var strayNames: [String] = []

    /// Lists `incoming/` of `spool`. `known`: the peeks of the last listing. `settle: false`
    /// claims files still being written too (`run --once` after waiting out the settle time).
    init?(spool: Spool, known: [String: Peeked], controls: JobControls?, now: Date, settle: Bool) {
        let incoming = spool.url(.incoming).path
        var remembered: [String: Peeked] = [:]
        var nextDue: Date?
        // Files that wait and have not changed since they were peeked stay out of the batch.
        guard let scan = FolderScan(incoming, limit: Self.batchSize, skip: { name, version in
            guard let seen = known[name], seen.version == version, !seen.settling, remembered.count < Self.rememberedLimit else { return false }
            let request = seen.id.flatMap { controls?.request(for: $0) }
            let waiting = request == .pause || (request == nil && (seen.notBefore.map { $0 > now } ?? false))
            guard waiting else { return false }
            remembered[name] = seen
            if request != .pause, let due = seen.notBefore { nextDue = min(nextDue ?? due, due) }
            return true
        }) else { return nil }
        unsafe = scan.unsafe
        jobs = scan.jobs
        oldestModified = scan.oldestModified
        strays = scan.strays
        strayNames = scan.strayNames
        for entry in scan.oldest {
            let name = entry.name
            let seen = known[name].flatMap { $0.version == entry.version && !$0.settling ? $0 : nil }
                ?? Self.peek(spool.url(.incoming, name).path, name: name, version: entry.version, now: now)
            var notBefore = seen.notBefore
            // Operators' requests: a paused job waits where it is; a cancelled one is taken now
            // (whatever its not_before) to be ended as cancelled.
            switch seen.id.flatMap({ controls?.request(for: $0) }) {
            case .pause?:
                remembered[name] = seen
                continue
            case .cancel?: notBefore = nil
            case nil: break
            }
            if seen.settling {
                let settled = Date(timeIntervalSince1970: entry.version.modified + Self.settleSeconds)
                if settle, settled > now {
                    notBefore = settled
                    settledBy = max(settledBy ?? settled, settled)
                } else {
                    notBefore = nil     // settled (or no more waiting): claimed, run or quarantined
                }
            }
            remembered[name] = seen
            if let notBefore, notBefore > now {
                nextDue = min(nextDue ?? notBefore, notBefore)
            } else {
                due.append(name)
            }
        }
        peeked = remembered
        self.nextDue = nextDue
    }

    /// One read and one JSON parse of the file: its id, its `not_before`, whether it is whole.
    /// A job that asks to wait is validated in full first: an invalid one is quarantined now,
    /// not when its time comes.
    static func peek(_ path: String, name: String, version: FileIO.Version, now: Date) -> Peeked {
        guard let bytes = JobFile.peek(path) else { return Peeked(version: version) }
        let peek = JobParser.peek(bytes, fileName: name)
        var seen = Peeked(version: version, notBefore: peek.notBefore, id: peek.id)
        if let due = peek.notBefore, due > now, (try? JobParser.parse(bytes, fileName: name)) == nil { seen.notBefore = nil }
        seen.settling = !peek.isWholeJSON && now.timeIntervalSince1970 - version.modified < settleSeconds
        return seen
    }
}
