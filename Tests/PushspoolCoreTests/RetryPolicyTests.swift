import Testing
@testable import PushspoolCore

@Suite struct RetryPolicyTests {
    let policy = RetryPolicy(maxAttempts: 4, baseDelay: 0.5, maxDelay: 3)

    /// (disposition, attempt, previous, random, expected decision)
    static let table: [(String, Disposition, Int, Disposition?, Double, RetryPolicy.Decision)] = [
        ("delivered", .delivered, 1, nil, 0.5, .finish(.delivered)),
        ("delivered after retries", .delivered, 4, .retry(after: nil), 0.5, .finish(.delivered)),
        ("device gone", .deviceGone(since: nil), 1, nil, 0.5, .finish(.unregistered)),
        ("device gone since", .deviceGone(since: 1_700_000_000), 2, nil, 0.5, .finish(.unregistered)),
        ("rejected", .rejected, 1, nil, 0.5, .finish(.failed)),
        ("sender refused", .senderRefused, 1, nil, 0.5, .finish(.failed)),
        ("credentials broken", .credentialsBroken, 1, nil, 0.5, .pauseProvider),
        ("refresh once", .refreshCredentials, 1, nil, 0.5, .retry(after: 0)),
        ("refresh after a retry", .refreshCredentials, 2, .retry(after: nil), 0.5, .retry(after: 0)),
        ("refresh twice in a row", .refreshCredentials, 2, .refreshCredentials, 0.5, .pauseProvider),
        ("refresh on last attempt", .refreshCredentials, 4, nil, 0.5, .finish(.failed)),
        ("reconnect", .reconnect, 1, nil, 0.5, .retry(after: 0)),
        ("reconnect on last attempt", .reconnect, 4, nil, 0.5, .finish(.failed)),
        ("retry attempt 1, jitter 0", .retry(after: nil), 1, nil, 0, .retry(after: 0)),
        ("retry attempt 1, jitter half", .retry(after: nil), 1, nil, 0.5, .retry(after: 0.25)),
        ("retry attempt 2 doubles", .retry(after: nil), 2, nil, 0.5, .retry(after: 0.5)),
        ("retry attempt 3 doubles again", .retry(after: nil), 3, nil, 0.5, .retry(after: 1)),
        ("retries exhausted", .retry(after: nil), 4, nil, 0.5, .finish(.failed)),
        ("retries exhausted past the cap", .retry(after: nil), 9, nil, 0.5, .finish(.failed)),
        ("retry-after above the jitter wins", .retry(after: 2), 1, nil, 0.5, .retry(after: 2)),
        ("retry-after capped at max delay", .retry(after: 60), 1, nil, 0.5, .retry(after: 3)),
        ("jitter above a small retry-after wins", .retry(after: 0.1), 3, nil, 0.5, .retry(after: 1)),
        ("retry-after exhausted", .retry(after: 2), 4, nil, 0.5, .finish(.failed)),
    ]

    @Test(arguments: table)
    func decisions(name: String, disposition: Disposition, attempt: Int, previous: Disposition?,
                   random: Double, expected: RetryPolicy.Decision) {
        #expect(policy.decide(disposition, attempt: attempt, previous: previous, random: { random }) == expected, "\(name)")
    }

    @Test(arguments: 1...12)
    func jitterStaysWithinTheCappedCeiling(attempt: Int) {
        let wide = RetryPolicy(maxAttempts: 100, baseDelay: 0.25, maxDelay: 300)
        var ceiling = 0.25
        for _ in 1..<attempt { ceiling *= 2 }
        ceiling = min(ceiling, 300)
        for r in [0.0, 0.25, 0.999_999] {
            guard case .retry(let after) = wide.decide(.retry(after: nil), attempt: attempt, random: { r }) else {
                Issue.record("attempt \(attempt) did not retry")
                continue
            }
            #expect(after >= 0)
            #expect(after < ceiling)
            #expect(after == ceiling * r)
        }
    }

    @Test func delayIsCappedAtMaxDelayForLateAttempts() {
        let wide = RetryPolicy(maxAttempts: 1000, baseDelay: 0.25, maxDelay: 300)
        #expect(wide.decide(.retry(after: nil), attempt: 500, random: { 0.5 }) == .retry(after: 150))
    }

    @Test func defaultsMatchTheSpecConfig() {
        #expect(RetryPolicy() == RetryPolicy(maxAttempts: 6, baseDelay: 0.25, maxDelay: 300))
    }
}
