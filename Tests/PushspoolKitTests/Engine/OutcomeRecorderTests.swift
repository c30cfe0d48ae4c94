import Dispatch
import Foundation
import Testing
@testable import PushspoolKit
import PushspoolTestSupport
import PushspoolCore

@Suite struct OutcomeRecorderTests {
    /// `rm -rf results/` while a job sends: the recorder, which writes the log, puts it back
    /// from the open file at its next write, with every line, and says so.
    @Test func aDeletedLogIsPutBackByTheRecorder() throws {
        let dir = TempDir("pushspool-recorder")
        try FileManager.default.createDirectory(atPath: dir.path("results"), withIntermediateDirectories: true)
        let url = dir.url.appendingPathComponent("results/j.jsonl")
        let log = try ResultLog(url: url)
        log.append(ResultRecord.jobLine(id: "j", file: "j.json", receivedAt: Date(), pns: [.apns], targets: 1))
        let events = CollectingLogHandler()
        let pruner = RegistryPruner(registry: try SQLiteRegistry(path: dir.path("registry.sqlite")), log: Log(minimum: .error), jobID: "j")
        let recorder = OutcomeRecorder(log: log, events: Log(minimum: .warning, handler: events), pruner: pruner, label: "j",
                                       start: LogPosition(offset: log.size), restoreEvery: 0)
        try FileManager.default.removeItem(atPath: dir.path("results"))

        let written = DispatchSemaphore(value: 0)
        let device = Device(id: "d1", platform: .apns, handle: "h", tags: [], updatedAt: Date())
        // From another thread, as a transport's completion queue answers: the recorder's queue writes it.
        DispatchQueue.global().async {
            recorder.record(OutcomeRecorder.Entry(platform: .apns, provider: "apns", recipient: .device(device),
                                                  outcome: TargetOutcome(status: .delivered, attempts: 1, result: ProviderResult(.delivered)), at: Date(),
                                                  then: { written.signal() }))
        }
        #expect(written.wait(timeout: .now() + 30) == .success)
        let records = dir.records("results/j.jsonl")
        #expect(records.compactMap(\.asJob).count == 1 && records.compactMap(\.asDelivery).map(\.device) == ["d1"], "\(records)")
        #expect(events.events.contains { $0.message.contains("result log j.jsonl was deleted while the job ran; restored") })
        try log.close()
    }
}

/// Which outcomes remove a device from the registry: the provider's classification decides,
/// the recorder carries it out.
@Suite struct TargetOutcomePruningTests {
    @Test func onlyAGoneDeviceIsRemoved() {
        let device = Recipient.device(Device(id: "d1", platform: .apns, handle: "tok", tags: [], updatedAt: Date()))
        let hub = Recipient.hub(.expression(.tag("a"), source: "a"))
        func outcome(_ status: DeliveryStatus, _ d: Disposition) -> TargetOutcome {
            TargetOutcome(status: status, attempts: 1, result: ProviderResult(d, code: "410"))
        }
        let gone = outcome(.unregistered, .deviceGone(since: 1_700_000_000)).pruning(device)
        #expect(gone?.id == "d1" && gone?.handle == "tok" && gone?.since == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(outcome(.unregistered, .deviceGone(since: nil)).pruning(device)?.since == nil)
        #expect(outcome(.unregistered, .deviceGone(since: nil)).pruning(device) != nil)
        #expect(outcome(.unregistered, .deviceGone(since: nil)).pruning(hub) == nil)
        #expect(outcome(.delivered, .delivered).pruning(device) == nil)
        #expect(outcome(.failed, .rejected).pruning(device) == nil)
        #expect(outcome(.failed, .deviceGone(since: nil)).pruning(device) == nil)
    }
}
