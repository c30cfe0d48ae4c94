import Dispatch
import Foundation
import Testing
import Synchronization
import PushspoolCore
@testable import PushspoolKit

/// Hub installation writes take the worker pool's one attempt-and-retry path: the pool's random
/// source, the provider's pause and its quiet time apply to them as to sends.
@Suite struct InstallationWriterTests {
    /// A hub answering installation writes from a script (then `.delivered`), noting when each came.
    final class ScriptedHub: PushProvider, InstallationStore, @unchecked Sendable {
        let name = "azure"
        let script: Mutex<[ProviderResult]>
        let calls = Mutex<[Date]>([])
        init(_ script: [ProviderResult] = []) { self.script = Mutex(script) }
        var resolvesTags: Bool { true }
        var installations: (any InstallationStore)? { self }
        func send(_ request: SendRequest, completion: @escaping @Sendable (ProviderResult) -> Void) { completion(ProviderResult(.rejected)) }
        func shutdown() {}
        func serves(_ platform: Platform) -> Bool { platform == .wns }
        func apply(_ change: InstallationChange, completion: @escaping @Sendable (ProviderResult) -> Void) {
            calls.withLock { $0.append(Date()) }
            completion(script.withLock { $0.isEmpty ? ProviderResult(.delivered) : $0.removeFirst() })
        }
    }

    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    /// Writes one change and waits (bounded) for its outcome.
    func write(_ writer: InstallationWriter) -> InstallationWriter.Outcome? {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<InstallationWriter.Outcome?>(nil)
        writer.write(.delete(id: "inst-1"), platform: .wns) { o in
            outcome.withLock { $0 = o }
            done.signal()
        }
        guard done.wait(timeout: .now() + 60) == .success else { return nil }
        return outcome.withLock { $0 }
    }

    @Test func retriesUseThePoolsRandomSource() throws {
        let hub = ScriptedHub([ProviderResult(.retry(after: nil), code: "503", reason: "busy")])
        let draws = Counter()
        // A 60 s backoff ceiling: only the injected 0 makes the retry immediate.
        let pool = WorkerPool(concurrency: 1, policy: RetryPolicy(maxAttempts: 3, baseDelay: 60, maxDelay: 60),
                              random: { draws.value.add(1, ordering: .relaxed); return 0 })
        let writer = InstallationWriter(routes: [.wns: ProviderState(provider: hub)], pool: pool)
        let outcome = try #require(write(writer))
        #expect(outcome.ok && outcome.attempts == 2)
        #expect(draws.value.load(ordering: .relaxed) == 1)
    }

    @Test func aPausedHubIsNotCalled() throws {
        let hub = ScriptedHub()
        let state = ProviderState(provider: hub)
        state.pause("credentials rejected")
        let writer = InstallationWriter(routes: [.wns: state], pool: WorkerPool(concurrency: 1, policy: RetryPolicy()))
        let outcome = try #require(write(writer))
        #expect(!outcome.ok && outcome.result.code == "paused")
        #expect(hub.calls.withLock { $0 }.isEmpty)
    }

    @Test func theHubsQuietTimeIsWaitedOut() throws {
        let hub = ScriptedHub()
        let state = ProviderState(provider: hub)
        let quietUntil = Date().addingTimeInterval(0.3)
        state.quiet(until: quietUntil)
        let writer = InstallationWriter(routes: [.wns: state], pool: WorkerPool(concurrency: 1, policy: RetryPolicy()))
        let outcome = try #require(write(writer))
        #expect(outcome.ok)
        let first = try #require(hub.calls.withLock { $0.first })
        #expect(first >= quietUntil)
    }

    /// A Retry-After from the hub quiets the provider for every caller, sends included.
    @Test func aHubRetryAfterQuietsTheProvider() throws {
        let hub = ScriptedHub([ProviderResult(.retry(after: 0.2), code: "429", reason: "slow down")])
        let state = ProviderState(provider: hub)
        let writer = InstallationWriter(routes: [.wns: state], pool: WorkerPool(concurrency: 1, policy: RetryPolicy(), random: { 0 }))
        let before = Date()
        let outcome = try #require(write(writer))
        #expect(outcome.ok && outcome.attempts == 2)
        #expect(state.quietUntil > before)
    }
}
