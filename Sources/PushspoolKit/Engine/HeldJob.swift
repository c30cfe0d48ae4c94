import Foundation
import PushspoolCore

/// A job file the runner holds while it runs it: locked in `active/` and parsed. Every step of the run reports through it.
struct HeldJob {
    let name: String
    let job: Job
    let file: JobFile
    let origin: JobDecision.Origin
    let activePath: String
    let started: Date

    /// Still at its place in `active/`: false once its owner finished it and moved it on.
    var isInPlace: Bool { file.isAt(activePath) }

    var elapsedMS: Int { Int(Date().timeIntervalSince(started) * 1000) }

    /// When the job arrived: its file's modification time, for the job line.
    var receivedAt: Date { Self.receivedAt(activePath) }

    func report(_ outcome: JobReport.Outcome, file: String? = nil) -> JobReport {
        JobReport(id: job.id, file: file ?? name, outcome: outcome)
    }

    static func receivedAt(_ path: String) -> Date {
        let attrs = try? FileManager.default.attributesOfItem(atPath: path)
        return (attrs?[.modificationDate] as? Date) ?? Date()
    }
}
