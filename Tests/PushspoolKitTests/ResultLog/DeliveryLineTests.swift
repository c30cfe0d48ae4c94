import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// The origin's fast read of a delivery line's status and attempts agrees with the full parse,
/// whatever the line holds (a device id or reason with quotes, the key's own text, backslashes).
struct DeliveryLineTests {
    static let ids = ["d1", #"a","status":"failed"#, #"back\slash\"#, "\u{1F}ctl", "ünï"]
    static let outcomes: [TargetOutcome] = [
        TargetOutcome(status: .delivered, attempts: 1, result: ProviderResult(.delivered)),
        TargetOutcome(status: .failed, attempts: 6, result: ProviderResult(.rejected, code: "400", reason: #"bad "payload","status":"delivered""#)),
        TargetOutcome(status: .unregistered, attempts: 12, result: ProviderResult(.deviceGone(since: nil), code: "410")),
        TargetOutcome(status: .capped, attempts: 0, result: ProviderResult(.rejected, reason: "over the cap")),
    ]

    @Test(arguments: ids)
    func readsWhatTheFullParseReads(_ id: String) {
        for outcome in Self.outcomes {
            var line: [UInt8] = []
            let device = Device(id: id, platform: .fcm, handle: "h", tags: [], updatedAt: Date())
            ResultRecord.appendDelivery(platform: .fcm, provider: "fcm", recipient: .device(device), outcome: outcome, at: Date(), to: &line)
            line.removeLast()   // the newline
            guard case .delivery(let parsed)? = ResultRecord(line: line) else {
                Issue.record("not a delivery line: \(String(decoding: line, as: UTF8.self))")
                continue
            }
            let fast = DeliveryLine.statusAndAttempts(line)
            #expect(fast?.0 == parsed.status && fast?.1 == parsed.attempts, "\(String(decoding: line, as: UTF8.self))")
            #expect(fast?.0 == outcome.status && fast?.1 == outcome.attempts)
        }
    }

    @Test func otherLinesAreNotDeliveries() {
        #expect(DeliveryLine.statusAndAttempts(Array(#"{"type":"summary","status":"done"}"#.utf8)) == nil)
        #expect(DeliveryLine.statusAndAttempts(Array("not json".utf8)) == nil)
    }
}
