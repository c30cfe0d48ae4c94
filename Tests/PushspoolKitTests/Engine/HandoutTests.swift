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
                                                        outcome: TargetOutcome(status: .delivered, attempts: 1, result: result), at: Date()) {
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
                                                   outcome: TargetOutcome(status: .capped, attempts: 0, result: ProviderResult(.rejected)), at: Date()) {
                then.add()
            })
        }
        #expect(f.deliveries().isEmpty && then.value == 0)
        f.handout.release()
        #expect(then.value == 3)
        #expect(f.deliveries() == ["d0", "d1", "d2"])
        try f.log.close()
    }

    /// A provider that batches up to three targets per request and records each request's handles.
    final class Batcher: BatchingProvider {
        let name = "batcher"
        let maxBatch = 3
        let requests = Mutex<[[String]]>([])
        func batchKey(_ request: SendRequest) -> BatchKey? {
            guard case .device(let d) = request.recipient else { return nil }
            return BatchKey(message: Array("m".utf8), member: d.handle)
        }
        func send(batch requests: [SendRequest], answers: [@Sendable (ProviderResult) -> Void]) {
            self.requests.withLock { r in
                r.append(requests.compactMap { if case .device(let d) = $0.recipient { d.handle } else { nil } })
            }
            for answer in answers { answer(ProviderResult(.delivered)) }
        }
        func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) {
            send(batch: [request], answers: [completion])
        }
        func shutdown() {}
    }

    /// A batch leaves at once when full, or when a member would be in it twice, and the others at
    /// `release`; its slot is given back once it left and every target it carried has ended.
    @Test func batchesLeaveFullOrAtReleaseAndFreeTheirSlotLast() throws {
        let f = try Fixture()
        let batcher = Batcher()
        let freed = Count()
        func request(_ handle: String) -> SendRequest {
            SendRequest(jobID: "j", platform: .hms, recipient: .device(Device(id: handle, platform: .hms, handle: handle, tags: [], updatedAt: Date())),
                        notification: .apns(APNsNotification(payload: Array("{}".utf8))))
        }
        let ended = Mutex<[@Sendable () -> Void]>([])
        /// Hands `handle` out as the worker pool does: into the open batch, or a new one.
        func handOut(_ handle: String) {
            let key = batcher.batchKey(request(handle))!
            let batch = f.handout.batch(for: batcher, key: key) ?? f.handout.open(for: batcher, key: key) { freed.add() }
            batch.join()
            f.handout.add(request(handle), member: key.member, to: batch) { _ in ended.withLock { $0.append { batch.leave() } } }
        }
        for h in ["a", "b", "c", "d"] { handOut(h) }
        #expect(batcher.requests.withLock { $0 } == [["a", "b", "c"]], "a full batch leaves at once")
        handOut("d")
        #expect(batcher.requests.withLock { $0 } == [["a", "b", "c"], ["d"]], "d twice in one request: the batch holding it left first")
        handOut("e")
        f.handout.release()
        #expect(batcher.requests.withLock { $0 } == [["a", "b", "c"], ["d"], ["d", "e"]])
        #expect(freed.value == 0, "no target has ended yet")
        let leaves = ended.withLock { $0 }
        #expect(leaves.count == 6)
        for leave in leaves.prefix(3) { leave() }
        #expect(freed.value == 1, "the first batch's slot, once its three targets ended")
        for leave in leaves.dropFirst(3) { leave() }
        #expect(freed.value == 3)
        try f.log.close()
    }
}
