import Foundation
import Synchronization
import Testing
@testable import PushspoolKit
import PushspoolTestSupport

/// `max_per_second` shared across hosts: the grant arithmetic, and a limiter spending grants
/// from a bucket (one round trip per grant, not per push; the local cap when it cannot be reached).
@Suite struct SharedRateLimiterTests {
    /// A bucket in memory that counts its grants, or fails every one.
    final class CountingSource: RateGrantSource {
        let calls = Atomic<Int>(0)
        let failing: Bool
        let firstDelay: Double
        init(failing: Bool = false, firstDelay: Double = 0) {
            self.failing = failing
            self.firstDelay = firstDelay
        }
        var location: String { "postgresql://app:***@db/push" }
        func grant(bucket name: String, count: Int, perSecond: Double) throws -> RateGrant {
            calls.add(1, ordering: .relaxed)
            if failing { throw RegistryError("connection refused", kind: .unavailable) }
            return RateGrant(count: count, firstDelay: firstDelay)
        }
    }

    @Test func grantArithmetic() {
        #expect(RateGrant.size(perSecond: 300) == 30)
        #expect(RateGrant.size(perSecond: 5) == 1)
        // A rested bucket (no debt before it): due at once.
        #expect(RateGrant.taken(count: 30, leaving: -30, perSecond: 300) == RateGrant(count: 30, firstDelay: 0))
        #expect(RateGrant.taken(count: 30, leaving: -12.5, perSecond: 300) == RateGrant(count: 30, firstDelay: 0))
        // Two grants already scheduled ahead (the bucket was 60 in debt): after them, 0.2 s.
        let queued = RateGrant.taken(count: 30, leaving: -90, perSecond: 300)
        #expect(abs(queued.firstDelay - 0.2) < 1e-9)
    }

    @Test func oneRoundTripPerGrantNotPerPush() {
        let clock = FakeSeconds(1000)
        let source = CountingSource()
        let limiter = RateLimiter(perSecond: 300, shared: .init(source: source, bucket: "provider:fcm"), clock: { clock.now })
        let times = (0..<600).map { _ in limiter.reserve() }
        for (a, b) in zip(times, times.dropFirst()) { #expect(b - a > 1 / 300.0 - 1e-9) }
        let calls = source.calls.load(ordering: .relaxed)
        #expect(calls >= 20 && calls <= 22, "600 pushes in grants of 30: \(calls) grants")
    }

    @Test func aGrantDueLaterIsWaitedFor() {
        let clock = FakeSeconds(1000)
        let limiter = RateLimiter(perSecond: 100, shared: .init(source: CountingSource(firstDelay: 0.5), bucket: "app:chat"),
                                  clock: { clock.now })
        #expect(limiter.reserve() == 1000.5)
        #expect(abs(limiter.reserve() - 1000.51) < 1e-9)
    }

    @Test func anUnreachableBucketFallsBackToTheLocalCapAndSaysSoOnce() {
        let clock = FakeSeconds(1000)
        let source = CountingSource(failing: true)
        let sink = CollectingLogHandler()
        let limiter = RateLimiter(perSecond: 100, shared: .init(source: source, bucket: "provider:fcm",
                                                               log: Log(minimum: .info, handler: sink)),
                                  clock: { clock.now })
        let times = (0..<300).map { _ in limiter.reserve() }
        #expect(times.first == 1000)
        for (a, b) in zip(times, times.dropFirst()) { #expect(abs(b - a - 0.01) < 1e-9) }
        // Tried once, then not again within the retry interval (the fake clock stands still).
        #expect(source.calls.load(ordering: .relaxed) == 1)
        let lines = sink.events.map(\.message)
        #expect(lines.count == 1 && lines[0].contains("cannot be reached") && lines[0].contains("provider:fcm"), "\(lines)")
        #expect(!lines.joined().contains("s3cret"))
    }
}
