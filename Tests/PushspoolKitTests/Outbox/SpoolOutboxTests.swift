import Foundation
import Synchronization
import Testing
@testable import PushspoolKit

/// The outbox's thread against a clock the test moves: a retry is sent when its time comes
/// (not before), one key is never sent twice at once, and `drain` waits for what is in flight.
@Suite struct SpoolOutboxTests {
    final class Clock: Sendable { let now = Mutex<Double>(1000) }

    @Test func aRetryIsSentWhenItsTimeComesAndNotBefore() {
        let clock = Clock()
        let outbox = SpoolOutbox<String>(name: "test-outbox", maxInFlight: 4, now: { clock.now.withLock { $0 } })
        let sent = Mutex<[String]>([])
        outbox.start(send: { key in
            let n = sent.withLock { $0.append(key); return $0.count }
            if n == 1 { outbox.retry(key, at: 1030) } else { outbox.finished(key) }
        })
        defer { outbox.stop() }
        outbox.ready("a")
        eventually("the retry scheduled", lastSeen: { "\(outbox.state(of: "a").map { "\($0)" } ?? "none")" }) {
            outbox.state(of: "a") == .waiting(due: 1030)
        }
        // Other work runs meanwhile, and a turn at 1029.9 does not send the retry.
        clock.now.withLock { $0 = 1029.9 }
        outbox.ready("b")
        eventually("b sent") { sent.withLock { $0 } == ["a", "b"] }
        #expect(outbox.state(of: "a") == .waiting(due: 1030))
        clock.now.withLock { $0 = 1030 }
        outbox.wake()
        eventually("a sent again", lastSeen: { "\(sent.withLock { $0 })" }) { sent.withLock { $0 } == ["a", "b", "a"] }
        eventually("nothing left") { outbox.state(of: "a") == nil && outbox.inFlight == 0 }
    }

    @Test func aKeyMadeReadyWhileInFlightIsSentOnceMoreAfterwards() {
        let outbox = SpoolOutbox<String>(name: "test-outbox", maxInFlight: 4, now: { 0 })
        let sends = Mutex(0), open = Mutex<[String]>([])
        outbox.start(send: { key in
            sends.withLock { $0 += 1 }
            open.withLock { $0.append(key) }
        })
        defer { outbox.stop() }
        outbox.ready("a")
        eventually("a in flight") { open.withLock { $0.count } == 1 }
        outbox.ready("a")
        outbox.ready("a")
        #expect(outbox.state(of: "a") == .inFlight(again: true))
        #expect(sends.withLock { $0 } == 1)
        outbox.finished("a")
        eventually("a sent once more") { sends.withLock { $0 } == 2 }
        outbox.finished("a")
        outbox.drain(timeout: 60)
        #expect(outbox.inFlight == 0 && sends.withLock { $0 } == 2)
    }
}
