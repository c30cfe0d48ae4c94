import Foundation
import Synchronization
import Testing
@testable import PushspoolKit

/// The hub queue on the spool outbox, against a real SQLite registry and a hub that refuses
/// writes while told to: a refused mark stays in `hub/pending/` and is written once its retry is
/// due, a held mark waits for its registry change, and a mark made again while its write runs
/// is written once more.
@Suite struct HubQueueTests {
    final class Hub: PushProvider, InstallationStore, @unchecked Sendable {
        let name = "azure"
        let changes = Mutex<[InstallationChange]>([])
        let refusals = Atomic<Int>(0)
        /// Called as each write arrives, before it is answered.
        let onApply = Mutex<(@Sendable () -> Void)?>(nil)
        var resolvesTags: Bool { true }
        var installations: (any InstallationStore)? { self }
        func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) { completion(ProviderResult(.rejected)) }
        func shutdown() {}
        func serves(_ platform: Platform) -> Bool { platform == .fcm }
        func apply(_ change: InstallationChange, completion: @escaping @Sendable (ProviderResult) -> Void) {
            changes.withLock { $0.append(change) }
            onApply.withLock { $0 }?()
            let refuse = refusals.load(ordering: .relaxed) > 0
            if refuse { refusals.subtract(1, ordering: .relaxed) }
            completion(refuse ? ProviderResult(.rejected, code: "400", reason: "no") : ProviderResult(.delivered))
        }
    }

    struct Rig {
        let dir: TempDir
        let registry: SQLiteRegistry
        let hub = Hub()
        let queue: HubQueue

        init(retryAfter: Double) throws {
            (dir, registry) = try RegistryFixture.make()
            let writer = InstallationWriter(routes: [.fcm: ProviderState(provider: hub)],
                                            pool: WorkerPool(concurrency: 4, policy: RetryPolicy(maxAttempts: 1)))
            queue = try HubQueue(spool: try Spool(root: dir.url.appendingPathComponent("spool")), writer: writer,
                                 registry: registry, log: Log(minimum: .error), retryAfter: retryAfter)
            queue.start()
        }

        func register(_ id: String) throws {
            try queue.hold(id, platform: .fcm)
            _ = try registry.upsert(RegistryFixture.reg(id, .fcm, "tok-\(id)"), now: Date())
            queue.release(id)
        }

        var pending: [String] { dir.list("spool/hub/pending") }
    }

    @Test func aRefusedMarkStaysPendingAndIsWrittenWhenItsRetryIsDue() throws {
        let rig = try Rig(retryAfter: 0.05)
        defer { rig.queue.stop() }
        rig.hub.refusals.store(2, ordering: .relaxed)
        try rig.register("d1")
        eventually("written after two refusals", lastSeen: { "\(rig.hub.changes.withLock { $0.count }) writes, \(rig.queue.status(of: "d1"))" }) {
            rig.queue.status(of: "d1") == .written
        }
        #expect(rig.hub.changes.withLock { $0.map(\.installationID) } == ["d1", "d1", "d1"])
        #expect(rig.pending.isEmpty)
    }

    @Test func aRefusedMarkKeepsItsReasonUntilItsRetry() throws {
        let rig = try Rig(retryAfter: 3600)
        defer { rig.queue.stop() }
        rig.hub.refusals.store(1, ordering: .relaxed)
        try rig.register("d1")
        eventually("refused once", lastSeen: { "\(rig.queue.status(of: "d1"))" }) {
            if case .pending(let why?) = rig.queue.status(of: "d1") { return why.contains("400") }
            return false
        }
        #expect(rig.pending == ["d1"])
        // A new change of the device does not wait for the retry: it is written now.
        try rig.register("d1")
        eventually("written", lastSeen: { "\(rig.queue.status(of: "d1"))" }) { rig.queue.status(of: "d1") == .written }
        #expect(rig.hub.changes.withLock { $0.count } == 2)
    }

    @Test func aHeldMarkWaitsForItsReleaseAndOneMadeAgainMidWriteIsWrittenOnceMore() throws {
        let rig = try Rig(retryAfter: 3600)
        defer { rig.queue.stop() }
        try rig.queue.hold("d1", platform: .fcm)
        _ = try rig.registry.upsert(RegistryFixture.reg("d1", .fcm, "tok-1", ["a"]), now: Date())
        // Another mark's write goes meanwhile; d1's waits for its registry change.
        try rig.register("d2")
        eventually("d2 written") { rig.queue.status(of: "d2") == .written }
        #expect(rig.hub.changes.withLock { $0.map(\.installationID) } == ["d2"])
        // d1 released: while its write is at the hub, the device changes again.
        let queue = rig.queue, registry = rig.registry
        let once = Atomic<Bool>(false)
        rig.hub.onApply.withLock {
            $0 = {
                guard !once.exchange(true, ordering: .relaxed) else { return }
                try? queue.hold("d1", platform: .fcm)
                _ = try? registry.upsert(RegistryFixture.reg("d1", .fcm, "tok-1", ["b"]), now: Date())
                queue.release("d1")
            }
        }
        rig.queue.release("d1")
        eventually("d1 written twice", lastSeen: { "\(rig.hub.changes.withLock { $0.map(\.installationID) })" }) {
            rig.hub.changes.withLock { $0.filter { $0.installationID == "d1" }.count } == 2 && rig.queue.status(of: "d1") == .written
        }
        guard case .put(let last)? = rig.hub.changes.withLock({ $0.last }) else { Issue.record("no put"); return }
        #expect(last.tags == ["b"])
    }
}
