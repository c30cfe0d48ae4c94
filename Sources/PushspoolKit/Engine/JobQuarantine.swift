import Foundation
import PushspoolCore

/// Moves job files that cannot be run to `failed/`, each with a result log saying why in one
/// sentence.
struct JobQuarantine: Sendable {
    let spool: Spool
    /// The `received_at` of a job whose file's modification time cannot be read (its `wall` time).
    var clock: EngineClock = .system

    /// An unprocessable job in `active/`. The log is `results/<id>.jsonl` when that name is free;
    /// when a job with this id already has one (a corrected job re-dropped with a typo, a job of
    /// that id running now), the invalid one gets a log of its own and theirs is never touched,
    /// so idempotency holds.
    func quarantine(_ name: String, id: String, error: String, pns: [Platform], file: JobFile?) -> JobReport {
        let activePath = spool.url(.active, name).path
        if let log = spool.createResultLog(preferring: id) {
            log.append(ResultRecord.jobLine(id: id, file: name, receivedAt: HeldJob.receivedAt(activePath, clock: clock), pns: pns, targets: 0))
            log.append(ResultRecord.summary(id: id, outcome: .failed(error), durationMS: 0))
            try? log.close()
        }
        if let file, !file.isAt(activePath) {
            return JobReport(id: id, file: name, outcome: .skipped)
        }
        let moved = spool.quarantine(name) ?? name
        return JobReport(id: id, file: moved, outcome: .failed(error))
    }

    /// A job file that could not be opened: another process holds it, it is gone, or it is no
    /// job file at all (quarantined).
    func unopened(_ name: String, id: String, error: JobFile.OpenError) -> JobReport {
        switch error {
        case .busy: return JobReport(id: id, file: name, outcome: .busy)
        case .gone: return JobReport(id: id, file: name, outcome: .skipped)
        case .notRegular(let what): return quarantine(name, id: id, error: "the job file is \(what), not a regular file", pns: [], file: nil)
        default: return quarantine(name, id: id, error: "cannot open the job file: \(error)", pns: [], file: nil)
        }
    }

    /// A job file whose bytes are no valid job: its log keeps the id and platforms it declares,
    /// as far as they can be read (the job never ran, but its log should say what it asked for).
    func invalid(_ name: String, bytes: [UInt8], error: JobError, fallbackID: String, file: JobFile) -> JobReport {
        quarantine(name, id: JobParser.declaredID(bytes) ?? fallbackID, error: error.description,
                   pns: Self.declaredPlatforms(bytes), file: file)
    }

    /// A would-be job whose file name is not valid UTF-8 or holds control characters is never
    /// read: it goes from `folder` straight to `failed/` under a safe name, with a result log
    /// whose error shows the original name's bytes escaped. nil when another dispatcher moved it
    /// first, or (in `active/`) a live one holds it.
    func quarantine(unsafe raw: SpoolName, in folder: Spool.Folder) -> JobReport? {
        if folder == .active, JobFile.isHeld(raw.path(in: spool.url(.active).path)) { return nil }
        guard let moved = spool.quarantine(raw, from: folder) else { return nil }
        let id = String(moved.dropLast(5))
        let error = "the file name \"\(raw.escaped)\" \(raw.problem ?? "is unsafe"); the job was not read"
        if let log = spool.createResultLog(preferring: id) {
            let received = FileIO.modificationTime(spool.url(.failed, moved).path).map(Date.init(timeIntervalSince1970:)) ?? clock.wall()
            log.append(ResultRecord.jobLine(id: id, file: moved, receivedAt: received, pns: [], targets: 0))
            log.append(ResultRecord.summary(id: id, outcome: .failed(error), durationMS: 0))
            try? log.close()
        }
        return JobReport(id: id, file: moved, outcome: .failed(error))
    }

    /// The platforms an invalid job file names in `pns`, as far as they can be read.
    static func declaredPlatforms(_ bytes: [UInt8]) -> [Platform] {
        guard let value = try? JSONParser.parse(bytes) else { return [] }
        let names: [String]
        switch value["pns"] {
        case .string(let one)?: names = [one]
        case .array(let items)?: names = items.compactMap { if case .string(let n) = $0 { n } else { nil } }
        default: return []
        }
        var seen: [Platform] = []
        for platform in names.compactMap(Platform.init(name:)) where !seen.contains(platform) { seen.append(platform) }
        return seen
    }
}
