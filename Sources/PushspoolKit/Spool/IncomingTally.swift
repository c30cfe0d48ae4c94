import Foundation
import PushspoolCore

/// `.state/incoming.tally`: what the dispatcher's last listing of `incoming/` found (how many
/// jobs, since when, how many files that are not jobs), written by the dispatcher after each
/// listing, so that `status` need not list a folder the dispatcher has just listed.
///
/// Listing a folder costs time in proportion to its entries, whoever lists it: 1,000,000 names
/// take about 1.4 s (`ls -f | wc -l` as much), more while a dispatcher renames files out of the
/// same folder. The dispatcher lists `incoming/` anyway (to pick its next batch), so `status`
/// takes its count while that dispatcher is responding, and counts by itself otherwise.
package struct IncomingTally: Equatable {
    var jobs: Int
    var strays: Int
    /// The oldest job's modification time (seconds since the epoch), nil when none waits.
    var oldestModified: Double?
    /// When the listing ended (seconds since the epoch) and which process made it.
    var at: Double
    var pid: Int32

    static func url(_ spool: Spool) -> URL { spool.stateDirectory.appendingPathComponent("incoming.tally") }

    /// Replaces the tally (a temporary file renamed over it: a reader sees the old one or the new
    /// one). Not synced: it is a hint rebuilt at every listing, and `status` falls back to
    /// counting when it is missing.
    func write(to spool: Spool) {
        let doc = JSONValue.object([("jobs", .int(Int64(jobs))), ("strays", .int(Int64(strays))),
                                    ("oldest_modified", oldestModified.map(JSONValue.double) ?? .null),
                                    ("at", .double(at)), ("pid", .int(Int64(pid)))])
        try? Data(doc.encoded()).write(to: Self.url(spool), options: .atomic)
    }

    static func read(_ spool: Spool) -> IncomingTally? {
        guard let bytes = try? FileIO.readAll(url(spool), limit: 4096), let doc = try? JSONParser.parse(bytes),
              case .int(let jobs)? = doc["jobs"], case .int(let strays)? = doc["strays"], case .int(let pid)? = doc["pid"],
              let at = number(doc["at"]) else { return nil }
        return IncomingTally(jobs: Int(jobs), strays: Int(strays), oldestModified: number(doc["oldest_modified"]),
                             at: at, pid: Int32(truncatingIfNeeded: pid))
    }

    /// `status --json`'s entry for `incoming/`, as a count of its own would give it, plus how long
    /// ago the dispatcher listed the folder (`listed_age_s`).
    package func json(now: Date) -> JSONValue {
        .object([("count", .int(Int64(jobs))),
                 ("oldest_age_s", oldestModified.map { .int(Int64(now.timeIntervalSince1970 - $0)) } ?? .null),
                 ("not_jobs", .int(Int64(strays))),
                 ("listed_age_s", .int(Int64(max(0, now.timeIntervalSince1970 - at))))])
    }

    private static func number(_ v: JSONValue?) -> Double? {
        switch v {
        case .int(let n)?: return Double(n)
        case .double(let d)?: return d
        default: return nil
        }
    }

    /// The tally if a dispatcher that is running and responding wrote it (its pid
    /// among `dispatchers`): that dispatcher lists `incoming/` again whenever it changes.
    package static func current(_ spool: Spool, dispatchers: [DispatcherPresence.Seen]) -> IncomingTally? {
        guard let tally = read(spool),
              dispatchers.contains(where: { $0.isResponding && $0.record.pid == tally.pid })
        else { return nil }
        return tally
    }
}
