import Dispatch
import Foundation
import Synchronization
import Testing
@testable import PushspoolKit

/// The shared OAuth token source under FCM and WNS: callers never block, one fetch serves all.
@Suite struct AccessTokenSourceTests {
    /// Issues `t1`, `t2`, … and counts fetches; `gate` (when set) holds each fetch until signalled.
    final class Issuer: Sendable {
        let issued = Atomic<Int>(0)
        /// Every fetch, refused ones included.
        let calls = Atomic<Int>(0)
        let gate: DispatchSemaphore?
        let refuse: Bool
        init(gate: DispatchSemaphore? = nil, refuse: Bool = false) { self.gate = gate; self.refuse = refuse }
        func fetch(_ clock: OAuthTestClock) -> Result<CachedCredential, AccessTokenError> {
            calls.add(1, ordering: .relaxed)
            _ = gate?.wait(timeout: .now() + 10)   // a safety net only: the test signals it
            if refuse { return .failure(AccessTokenError(.refused, code: "400", reason: "refused")) }
            let n = issued.add(1, ordering: .relaxed).newValue
            return .success(CachedCredential(token: "t\(n)", issuedAt: clock.now, expiresAt: clock.now.addingTimeInterval(3600)))
        }
    }

    static func source(_ issuer: Issuer, clock: OAuthTestClock = OAuthTestClock()) -> AccessTokenSource {
        AccessTokenSource(key: "test", cache: CredentialCache(directory: nil, clock: { clock.now })) { issuer.fetch(clock) }
    }

    @Test func callersNeverWaitForTheFetchAndAllShareIt() {
        let gate = DispatchSemaphore(value: 0)
        let issuer = Issuer(gate: gate)
        let source = Self.source(issuer)
        let got = Mutex<[String]>([])
        let done = DispatchGroup()
        for _ in 0..<256 {
            done.enter()
            source.token { r in
                got.withLock { $0.append((try? r.get()) ?? "error") }
                done.leave()
            }
        }
        // Every call returned while the one fetch was still held at the gate.
        #expect(got.withLock { $0.isEmpty })
        gate.signal()
        done.wait()
        #expect(got.withLock { $0 } == Array(repeating: "t1", count: 256))
        #expect(issuer.calls.load(ordering: .relaxed) == 1)
    }

    @Test func invalidateDropsOnlyTheRefusedToken() async {
        let issuer = Issuer()
        let source = Self.source(issuer)
        #expect(await Self.token(source) == "t1")
        source.invalidate("some-older-token")
        #expect(await Self.token(source) == "t1")
        source.invalidate("t1")
        #expect(await Self.token(source) == "t2")
        #expect(issuer.calls.load(ordering: .relaxed) == 2)
    }

    @Test func aRefusalReachesTheCallerAndIsNotCached() async {
        let issuer = Issuer(refuse: true)
        let source = Self.source(issuer)
        let r1 = await withCheckedContinuation { c in source.token { c.resume(returning: $0) } }
        #expect(r1 == .failure(AccessTokenError(.refused, code: "400", reason: "refused")))
        _ = await withCheckedContinuation { c in source.token { c.resume(returning: $0) } }
        #expect(issuer.calls.load(ordering: .relaxed) == 2)
    }

    static func token(_ source: AccessTokenSource) async -> String? {
        await withCheckedContinuation { c in source.token { c.resume(returning: try? $0.get()) } }
    }
}
