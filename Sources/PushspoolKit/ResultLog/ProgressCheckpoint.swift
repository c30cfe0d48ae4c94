import Foundation
import PushspoolCore

/// A running job's progress in a few bytes, rewritten (tmp + rename) about once a second while it
/// sends, so `status` answers at once whatever the campaign's size instead of reading a result log
/// of a million lines. It lives beside the result log as `results/.<id>.progress` (hidden: not a
/// log) and is removed when the job finishes.
struct ProgressCheckpoint: Sendable, Equatable {
    var targets: Int?
    var finished: Int
    var delivered: Int
    var failed: Int
    var unregistered: Int
    /// Devices over their frequency cap (written when there are any).
    var capped = 0
    var updatedAt: Date
    /// Targets per second over the last second (nil before there is one).
    var rate: Double? = nil
    /// The job's pacing window, when it has one.
    var spreadOverSeconds: Int? = nil
    /// Where a resume after a crash can pick up, and the registry (`location`) whose keys it
    /// names: another registry's keys mean nothing, and the resume then reads the whole log.
    var resume: (point: ResumePoint, registry: String)? = nil

    static func == (a: ProgressCheckpoint, b: ProgressCheckpoint) -> Bool {
        a.targets == b.targets && (a.finished, a.delivered, a.failed, a.unregistered, a.capped) == (b.finished, b.delivered, b.failed, b.unregistered, b.capped)
            && a.updatedAt == b.updatedAt && a.rate == b.rate && a.spreadOverSeconds == b.spreadOverSeconds
            && a.resume?.point == b.resume?.point && a.resume?.registry == b.resume?.registry
    }

    static func url(in spool: Spool, jobID: String) -> URL {
        spool.url(.results).appendingPathComponent(".\(spool.firstGivenID(jobID)).progress")
    }

    func write(to url: URL) {
        var w = JSONLineWriter(capacity: 160)
        if let targets { w.field("targets", targets) }
        w.field("finished", finished)
        w.field("delivered", delivered)
        w.field("failed", failed)
        w.field("unregistered", unregistered)
        if capped > 0 { w.field("capped", capped) }
        w.field("updated_at", Timestamp.rfc3339(updatedAt))
        if let rate { w.field("rate", Int(rate.rounded())) }
        if let spreadOverSeconds { w.field("spread_over_seconds", spreadOverSeconds) }
        if let (p, registry) = resume {
            w.field("resume", .object([
                ("registry", .string(registry)), ("after", .int(p.after)), ("matched", .int(Int64(p.matched))), ("offset", .int(p.log.offset)),
                ("delivered", .int(Int64(p.log.delivered))), ("failed", .int(Int64(p.log.failed))),
                ("unregistered", .int(Int64(p.log.unregistered))), ("retries", .int(Int64(p.log.retries))),
                ("capped", .int(Int64(p.log.capped))),
                ("tails", .array(p.tails.map { .array([.int($0.lowerBound), .int($0.upperBound)]) })),
            ]))
        }
        let tmp = url.deletingLastPathComponent().appendingPathComponent(url.lastPathComponent + ".tmp")
        // Not durable on purpose: a checkpoint lost in a crash is rewritten by the resumed job.
        guard FileManager.default.createFile(atPath: tmp.path, contents: Data(w.line()), attributes: [.posixPermissions: 0o640]) else { return }
        _ = rename(tmp.path, url.path)
    }

    static func read(_ url: URL) -> ProgressCheckpoint? {
        guard let bytes = try? FileIO.readAll(url, limit: 4096), let v = try? JSONParser.parse(Array(bytes.dropLast())) else { return nil }
        func int(_ k: String) -> Int? { if case .int(let n)? = v[k] { Int(n) } else { nil } }
        guard let finished = int("finished") else { return nil }
        let at: Date? = { if case .string(let s)? = v["updated_at"] { Timestamp.parse(s) } else { nil } }()
        return ProgressCheckpoint(targets: int("targets"), finished: finished, delivered: int("delivered") ?? 0,
                                  failed: int("failed") ?? 0, unregistered: int("unregistered") ?? 0, capped: int("capped") ?? 0,
                                  updatedAt: at ?? .distantPast, rate: int("rate").map(Double.init),
                                  spreadOverSeconds: int("spread_over_seconds"), resume: v["resume"].flatMap(resumePoint))
    }

    private static func resumePoint(_ v: JSONValue) -> (point: ResumePoint, registry: String)? {
        func int(_ k: String) -> Int64? { if case .int(let n)? = v[k] { n } else { nil } }
        guard case .string(let registry)? = v["registry"], let after = int("after"), let offset = int("offset"),
              case .array(let tailValues)? = v["tails"] else { return nil }
        var tails: [Range<Int64>] = []
        for t in tailValues {
            guard case .array(let ends) = t, ends.count == 2, case .int(let a) = ends[0], case .int(let b) = ends[1], a <= b else { return nil }
            tails.append(a..<b)
        }
        let log = LogPosition(offset: offset, delivered: Int(int("delivered") ?? 0), failed: Int(int("failed") ?? 0),
                              unregistered: Int(int("unregistered") ?? 0), retries: Int(int("retries") ?? 0),
                              capped: Int(int("capped") ?? 0))
        return (ResumePoint(after: after, matched: Int(int("matched") ?? 0), log: log, tails: tails), registry)
    }
}
