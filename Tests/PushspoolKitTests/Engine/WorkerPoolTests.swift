import Foundation
import PushspoolHTTP
import Synchronization
import Testing
@testable import PushspoolKit
import PushspoolTestSupport
import PushspoolCore

@Suite struct WorkerPoolTests {
    /// One target through the pool with a scripted sequence of results.
    func outcome(_ script: [ProviderResult], policy: RetryPolicy = RetryPolicy(maxAttempts: 4, baseDelay: 0.001, maxDelay: 0.01),
                 state: ProviderState? = nil) -> (TargetOutcome, ScriptedProvider) {
        let provider = ScriptedProvider { r in script[min(r.attempt - 1, script.count - 1)] }
        let st = state ?? ProviderState(provider: provider)
        let pool = WorkerPool(concurrency: 2, policy: policy, random: { 0.5 })
        let box = ResultBox<TargetOutcome>()
        let device = Device(id: "d1", platform: .apns, handle: "h", tags: [], updatedAt: Date())
        pool.submit(SendRequest(jobID: "j", platform: .apns, recipient: .device(device),
                                notification: .apns(APNsNotification(payload: Array("{}".utf8)))), via: st) { box.set($0) }
        return (box.wait(), provider)
    }

    /// A service that is slow to answer (or throttled) fills its own slots only: another
    /// provider's targets go through at once.
    @Test func eachProviderHasItsOwnSlots() {
        let pool = WorkerPool(concurrency: 2, policy: RetryPolicy(maxAttempts: 1, baseDelay: 0.001, maxDelay: 0.01), random: { 0.5 })
        let slow = ProviderState(provider: ScriptedProvider(name: "slow", delay: 30))
        let fast = ProviderState(provider: ScriptedProvider(name: "fast"))
        let device = Device(id: "d1", platform: .apns, handle: "h", tags: [], updatedAt: Date())
        let request = SendRequest(jobID: "j", platform: .apns, recipient: .device(device),
                                  notification: .apns(APNsNotification(payload: Array("{}".utf8))))
        let slowAnswered = Atomic<Int>(0)
        for _ in 0..<2 { pool.submit(request, via: slow) { _ in slowAnswered.add(1, ordering: .relaxed) } }   // slow's two slots are taken
        let box = ResultBox<TargetOutcome>()
        pool.submit(request, via: fast) { box.set($0) }                 // would block with one shared pool
        #expect(box.wait().status == .delivered)
        #expect(slowAnswered.load(ordering: .relaxed) == 0, "fast went through while slow's slots were still taken")
    }

    @Test("retries transient failures, then delivers, counting attempts")
    func retryThenDeliver() {
        let (o, p) = outcome([ProviderResult(.retry(after: nil), code: "503"), ProviderResult(.reconnect, code: "transport"),
                              ProviderResult(.delivered, code: "200", providerID: "x")])
        #expect(o.status == .delivered)
        #expect(o.attempts == 3)
        #expect(o.result.providerID == "x")
        #expect(p.requests.count == 3)
    }

    @Test("gives up after max_attempts with the last reason")
    func exhausted() {
        let (o, p) = outcome([ProviderResult(.retry(after: nil), code: "500", reason: "InternalServerError")])
        #expect(o.status == .failed)
        #expect(o.attempts == 4)
        #expect(o.result.reason == "InternalServerError")
        #expect(p.requests.count == 4)
    }

    @Test("permanent rejections and gone devices are final at once")
    func finalAtOnce() {
        #expect(outcome([ProviderResult(.rejected, code: "400", reason: "BadTopic")]).0.status == .failed)
        let gone = outcome([ProviderResult(.deviceGone(since: 5), code: "410", reason: "Unregistered")])
        #expect(gone.0.status == .unregistered)
        #expect(gone.1.requests.count == 1)
    }

    @Test("broken credentials pause the provider; later targets fail without a request")
    func pause() {
        let provider = ScriptedProvider { _ in ProviderResult(.credentialsBroken, code: "403", reason: "InvalidProviderToken") }
        let state = ProviderState(provider: provider)
        let first = outcome([], state: state)
        #expect(first.0.status == .failed)
        #expect(state.pausedReason == "InvalidProviderToken")
        let second = outcome([], state: state)
        #expect(second.0.status == .failed)
        #expect(second.0.result.code == "paused")
        #expect(provider.requests.count == 1)
    }

    @Test("a pause ends after its duration: the service is tried again")
    func pauseExpires() {
        let provider = ScriptedProvider { r in
            r.attempt == 1 && r.jobID == "j" ? ProviderResult(.credentialsBroken, code: "403", reason: "Forbidden") : ProviderResult(.delivered)
        }
        let state = ProviderState(provider: provider, pauseDuration: 0.05)
        #expect(outcome([], state: state).0.status == .failed)
        #expect(state.pausedReason == "Forbidden")
        Thread.sleep(forTimeInterval: 0.1)
        #expect(state.pausedReason == nil)
    }

    @Test("a stale credential is retried once at once; twice in a row pauses")
    func refreshOnce() {
        let ok = outcome([ProviderResult(.refreshCredentials, code: "403"), ProviderResult(.delivered, code: "200")])
        #expect(ok.0.status == .delivered && ok.0.attempts == 2)
        let provider = ScriptedProvider { _ in ProviderResult(.refreshCredentials, code: "401") }
        let state = ProviderState(provider: provider)
        let broken = outcome([], state: state)
        #expect(broken.0.status == .failed)
        #expect(provider.requests.count == 2)
        #expect(state.pausedReason != nil)
    }

    @Test("a service's retry-after quiets the provider for new targets")
    func quiet() {
        let provider = ScriptedProvider { r in r.attempt == 1 ? ProviderResult(.retry(after: 0.05), code: "429") : ProviderResult(.delivered) }
        let state = ProviderState(provider: provider)
        let before = Date()
        let o = outcome([], policy: RetryPolicy(maxAttempts: 4, baseDelay: 0.001, maxDelay: 1), state: state)
        #expect(o.0.status == .delivered)
        #expect(state.quietUntil > before)
        #expect(Date().timeIntervalSince(before) >= 0.05)
    }

    /// The provider's clock stands still, so where the quiet ends says how long it is, however
    /// loaded the machine; an uncapped day-long wait fails at the time limit instead of hanging.
    @Test("a service's retry-after is honoured only up to max_delay", .timeLimit(.minutes(1)))
    func quietCapped() {
        let provider = ScriptedProvider { r in r.attempt == 1 ? ProviderResult(.retry(after: 86_400), code: "429") : ProviderResult(.delivered) }
        let clock = Date(timeIntervalSince1970: 1_000_000)
        let state = ProviderState(provider: provider, clock: EngineClock(now: { clock }, secondsUntil: { _ in 0 }, wall: { clock }, uptime: { 0 }))
        let o = outcome([], policy: RetryPolicy(maxAttempts: 4, baseDelay: 0.001, maxDelay: 0.05), state: state)
        #expect(o.0.status == .delivered)
        #expect(state.quietUntil == clock.addingTimeInterval(0.05))
    }

    @Test("an outage holds new targets back instead of burning their attempts")
    func outageThrottle() {
        let start = Date()
        let provider = ScriptedProvider { _ in
            Date().timeIntervalSince(start) < 0.4 ? ProviderResult(.retry(after: nil), code: "503") : ProviderResult(.delivered, code: "200")
        }
        let state = ProviderState(provider: provider)
        let pool = WorkerPool(concurrency: 4, policy: RetryPolicy(maxAttempts: 3, baseDelay: 0.02, maxDelay: 0.2), random: { 0.5 })
        let group = DispatchGroup()
        let delivered = Mutex(0)
        for i in 0..<200 {
            group.enter()
            let d = Device(id: "d\(i)", platform: .fcm, handle: "h\(i)", tags: [], updatedAt: Date())
            pool.submit(SendRequest(jobID: "j", platform: .fcm, recipient: .device(d),
                                    notification: .fcm(FCMNotification(message: .object([])))), via: state) { o in
                if o.status == .delivered { delivered.withLock { $0 += 1 } }
                group.leave()
            }
        }
        group.wait()
        // Without the throttle every target would burn its 3 attempts within the 0.4 s outage.
        #expect(delivered.withLock { $0 } >= 180)
        #expect(provider.requests.count < 400)
    }

    /// A provider that never calls back: each attempt ends at the pool's deadline as a
    /// transient failure, retried, then final, and the slot comes back. A late answer is ignored.
    /// (Waiting out the hour-long answer instead fails at the time limit.)
    @Test(.timeLimit(.minutes(1))) func anAttemptNobodyAnswersEndsAtItsDeadline() {
        let lost = ScriptedProvider(delay: 3600)
        let late = ScriptedProvider(delay: 0.6)
        let pool = WorkerPool(concurrency: 1, policy: RetryPolicy(maxAttempts: 2, baseDelay: 0.001, maxDelay: 0.01),
                              attemptTimeout: 0.2, random: { 0.5 })
        let device = Device(id: "d1", platform: .apns, handle: "h", tags: [], updatedAt: Date())
        let request = SendRequest(jobID: "j", platform: .apns, recipient: .device(device),
                                  notification: .apns(APNsNotification(payload: Array("{}".utf8))))
        let box = ResultBox<TargetOutcome>()
        pool.submit(request, via: ProviderState(provider: lost)) { box.set($0) }
        let o = box.wait()
        #expect(o.status == .failed)
        #expect(o.attempts == 2)
        #expect(o.result.code == "no-answer")
        #expect(lost.requests.count == 2)

        let calls = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        pool.submit(request, via: ProviderState(provider: late)) { o in
            calls.withLock { $0 += 1 }
            #expect(o.result.code == "no-answer")
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        eventually("both late answers to come and be handled", timeout: 30) { late.answered == 2 }
        #expect(calls.withLock { $0 } == 1)
        #expect(late.requests.count == 2)
    }

    @Test("never more than `concurrency` notifications in flight")
    func bounded() {
        let provider = ScriptedProvider(delay: 0.002)
        let state = ProviderState(provider: provider)
        let pool = WorkerPool(concurrency: 8, policy: RetryPolicy(), random: { 0.5 })
        let group = DispatchGroup()
        for i in 0..<400 {
            group.enter()
            let d = Device(id: "d\(i)", platform: .fcm, handle: "h\(i)", tags: [], updatedAt: Date())
            pool.submit(SendRequest(jobID: "j", platform: .fcm, recipient: .device(d),
                                    notification: .fcm(FCMNotification(message: .object([])))), via: state) { _ in group.leave() }
        }
        group.wait()
        #expect(provider.requests.count == 400)
        #expect(provider.maxInFlight <= 8)
        #expect(provider.maxInFlight >= 2)
    }

    @Test("producers sharing a provider's slots, woken for batches of them, all finish within `concurrency`")
    func batchesOfSlots() {
        let provider = ScriptedProvider(delay: 0.001)
        let state = ProviderState(provider: provider)
        let pool = WorkerPool(concurrency: 64, policy: RetryPolicy(), random: { 0.5 })
        let group = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: 3) { producer in
            for i in 0..<300 {
                group.enter()
                let d = Device(id: "d\(producer)-\(i)", platform: .fcm, handle: "h\(i)", tags: [], updatedAt: Date())
                pool.submit(SendRequest(jobID: "j\(producer)", platform: .fcm, recipient: .device(d),
                                        notification: .fcm(FCMNotification(message: .object([])))), via: state) { _ in group.leave() }
            }
        }
        group.wait()
        #expect(provider.requests.count == 900)
        #expect(provider.maxInFlight <= 64)
    }
}
