import Dispatch
import Foundation
import PushspoolCore
import Synchronization
import Testing
@testable import PushspoolKit

/// A producer's `Handout`: what it holds is neither sent nor recorded until `release`, which
/// sends each provider its requests in one call and records every answer (and the outcomes held)
/// on the calling thread before it returns, so the slots they hold are free by then.
@Suite struct HandoutTests {
    struct Fixture {
        let dir = TempDir("pushspool-handout")
        let log: ResultLog
        let recorder: OutcomeRecorder
        let handout: Handout

        init() throws {
            try FileManager.default.createDirectory(atPath: dir.path("results"), withIntermediateDirectories: true)
            log = try ResultLog(url: dir.url.appendingPathComponent("results/j.jsonl"))
            let pruner = RegistryPruner(registry: try SQLiteRegistry(path: dir.path("registry.sqlite")), log: Log(minimum: .error), jobID: "j")
            recorder = OutcomeRecorder(log: log, events: Log(minimum: .error), pruner: pruner, label: "j", start: LogPosition(offset: log.size))
            handout = Handout(recorder: recorder)
        }

        func deliveries() -> [String] { dir.records("results/j.jsonl").compactMap(\.asDelivery).compactMap(\.device) }
    }

    final class Count: Sendable {
        private let n = Atomic<Int>(0)
        func add() { n.add(1, ordering: .relaxed) }
        var value: Int { n.load(ordering: .relaxed) }
    }

    static func device(_ i: Int) -> Device {
        Device(id: "d\(i)", platform: .apns, handle: String(format: "%064x", i), tags: [], updatedAt: Date())
    }

    @Test func heldRequestsAreSentTogetherAndRecordedByRelease() throws {
        let f = try Fixture()
        let provider = SandboxProvider(outbox: f.dir.url.appendingPathComponent("outbox"))
        defer { provider.shutdown() }
        let recorded = Count()
        let recorder = f.recorder
        for i in 0..<50 {
            let request = SendRequest(jobID: "j", platform: .apns, recipient: .device(Self.device(i)),
                                      notification: .apns(APNsNotification(payload: Array(#"{"aps":{}}"#.utf8))))
            f.handout.send(request, to: provider) { result in
                recorder.record(OutcomeRecorder.Entry(platform: .apns, provider: "sandbox", recipient: request.recipient,
                                                        outcome: TargetOutcome(status: .delivered, attempts: 1, result: result)) {
                    recorded.add()
                })
            }
        }
        #expect(f.dir.read("outbox/apns.jsonl") == nil)
        #expect(recorded.value == 0 && f.deliveries().isEmpty)
        f.handout.release()
        // Written and recorded before `release` returns: no wait.
        #expect(f.dir.read("outbox/apns.jsonl")?.split(separator: "\n").count == 50)
        #expect(recorded.value == 50)
        #expect(f.deliveries() == (0..<50).map { "d\($0)" })
        f.handout.release()   // nothing held: nothing happens
        #expect(f.deliveries().count == 50)
        try f.log.close()
    }

    @Test func heldOutcomesAreWrittenByRelease() throws {
        let f = try Fixture()
        let then = Count()
        for i in 0..<3 {
            f.handout.record(OutcomeRecorder.Entry(platform: .apns, provider: "sandbox", recipient: .device(Self.device(i)),
                                                   outcome: TargetOutcome(status: .capped, attempts: 0, result: ProviderResult(.rejected))) {
                then.add()
            })
        }
        #expect(f.deliveries().isEmpty && then.value == 0)
        f.handout.release()
        #expect(then.value == 3)
        #expect(f.deliveries() == ["d0", "d1", "d2"])
        try f.log.close()
    }
}
