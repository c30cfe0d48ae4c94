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
    /// What `started` was read from (its `wall` time): the job's duration is measured on it.
    var clock: EngineClock = .system

    /// Still at its place in `active/`: false once its owner finished it and moved it on.
    var isInPlace: Bool { file.isAt(activePath) }

    var elapsedMS: Int { Int(clock.wall().timeIntervalSince(started) * 1000) }

    /// When the job arrived: its file's modification time, for the job line.
    var receivedAt: Date { Self.receivedAt(activePath, clock: clock) }

    func report(_ outcome: JobReport.Outcome, file: String? = nil) -> JobReport {
        JobReport(id: job.id, file: file ?? name, outcome: outcome)
    }

    /// Now (`clock`'s wall time) when the file's modification time cannot be read.
    static func receivedAt(_ path: String, clock: EngineClock) -> Date {
        let attrs = try? FileManager.default.attributesOfItem(atPath: path)
        return (attrs?[.modificationDate] as? Date) ?? clock.wall()
    }
}
