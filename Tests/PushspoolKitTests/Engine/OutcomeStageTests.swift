import Foundation
import PushspoolCore
import Synchronization
import Testing
@testable import PushspoolKit

/// The outcome stage: a final outcome is written, then counted, its resume ticket finished and
/// its slot released; an abandoned target is counted as such, unwritten; `wait` returns once
/// every target handed out has ended.
@Suite struct OutcomeStageTests {
    final class Count: Sendable {
        private let n = Atomic<Int>(0)
        func add() { n.add(1, ordering: .relaxed) }
        var value: Int { n.load(ordering: .relaxed) }
    }

    @Test func finalOutcomesAreWrittenThenCountedAndAbandonedOnesOnlyCounted() throws {
        let dir = TempDir("pushspool-outcome-stage")
        try FileManager.default.createDirectory(atPath: dir.path("results"), withIntermediateDirectories: true)
        let log = try ResultLog(url: dir.url.appendingPathComponent("results/j.jsonl"))
        let pruner = RegistryPruner(registry: try SQLiteRegistry(path: dir.path("registry.sqlite")), log: Log(minimum: .error), jobID: "j")
        let recorder = OutcomeRecorder(log: log, events: Log(minimum: .error), pruner: pruner, label: "j", start: LogPosition(offset: log.size))
        let tracker = ResumeTracker(start: ResumePoint(after: 0, log: LogPosition(offset: log.size)), runStart: log.size)
        let stage = OutcomeStage(tally: SendRun.Tally(ResultLogContents()), recorder: recorder, tracker: tracker, metrics: nil)
        let released = Count()
        func device(_ key: Int64) -> Recipient { .device(Device(id: "d\(key)", platform: .fcm, handle: "h\(key)", tags: [], updatedAt: Date())) }
        let targets = (1...3).map { stage.handOut(platform: .fcm, provider: "fcm", app: AppConfig.implicitID, recipient: device($0), key: $0) }
        recorder.record(stage.entry(targets[0], TargetOutcome(status: .delivered, attempts: 2, result: ProviderResult(.delivered)),
                                    release: { released.add() }))
        recorder.record(stage.entry(targets[1], TargetOutcome(status: .failed, attempts: 1, result: ProviderResult(.rejected)),
                                    release: { released.add() }))
        stage.abandoned(targets[2])
        stage.wait()
        let c = stage.tally.counts.withLock { $0 }
        #expect(c.delivered == 1 && c.failed == 1 && c.retries == 1 && c.abandoned == 1 && c.finished == 2)
        #expect(released.value == 2)
        #expect(dir.records("results/j.jsonl").compactMap(\.asDelivery).compactMap(\.device) == ["d1", "d2"])
        // Keys 1 and 2 ended; 3 did not: a resume starts after 2.
        #expect(tracker.point(current: recorder.position).after == 2)
        try log.close()
    }
}
