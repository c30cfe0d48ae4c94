import Foundation
import PushspoolHTTP
import PushspoolCore
import Testing
@testable import PushspoolKit

/// Every row of ADM's answer table (PROTOCOLS § 6), as recorded answers.
struct ADMClassifierTests {
    struct Recorded: Sendable, CustomStringConvertible {
        var status: Int
        var body: String
        var headers: [String: String] = [:]
        var expected: Disposition
        var canonical: String? = nil
        var description: String { "\(status) \(body)" }
    }

    static let sent = "amzn1.adm-registration.v3.sent"

    static let table: [Recorded] = [
        Recorded(status: 200, body: #"{"registrationID":"amzn1.adm-registration.v3.sent"}"#, expected: .delivered),
        Recorded(status: 200, body: #"{"registrationID":"amzn1.adm-registration.v3.newer"}"#, expected: .delivered,
                 canonical: "amzn1.adm-registration.v3.newer"),
        Recorded(status: 200, body: "", expected: .delivered),
        Recorded(status: 400, body: #"{"reason":"InvalidRegistrationId"}"#, expected: .deviceGone(since: nil)),
        Recorded(status: 400, body: #"{"reason":"Unregistered"}"#, expected: .deviceGone(since: nil)),
        Recorded(status: 400, body: #"{"reason":"InvalidData"}"#, expected: .rejected),
        Recorded(status: 400, body: #"{"reason":"InvalidConsolidationKey"}"#, expected: .rejected),
        Recorded(status: 400, body: #"{"reason":"InvalidExpiration"}"#, expected: .rejected),
        Recorded(status: 400, body: #"{"reason":"InvalidChecksum"}"#, expected: .rejected),
        Recorded(status: 400, body: #"{"reason":"InvalidType"}"#, expected: .rejected),
        Recorded(status: 400, body: #"{"reason":"MessageTooLarge"}"#, expected: .rejected),
        Recorded(status: 401, body: #"{"reason":"AccessTokenExpired"}"#, expected: .refreshCredentials),
        Recorded(status: 403, body: "", expected: .credentialsBroken),
        Recorded(status: 413, body: #"{"reason":"MessageTooLarge"}"#, expected: .rejected),
        Recorded(status: 429, body: #"{"reason":"MaxRateExceeded"}"#, headers: ["retry-after": "12"], expected: .retry(after: 12)),
        Recorded(status: 429, body: #"{"reason":"MaxRateExceeded"}"#, expected: .retry(after: nil)),
        Recorded(status: 500, body: "", expected: .retry(after: nil)),
        Recorded(status: 503, body: "", headers: ["retry-after": "3"], expected: .retry(after: 3)),
        Recorded(status: 404, body: "", expected: .rejected),
    ]

    @Test(arguments: table)
    func classifiesRecordedAnswer(_ r: Recorded) {
        let result = ADMProvider.classify(.success(HTTPResponse(status: r.status, headers: r.headers, body: Array(r.body.utf8))), sent: Self.sent)
        #expect(result.disposition == r.expected)
        #expect(result.code == String(r.status))
        #expect(result.canonicalHandle == r.canonical)
        // ADM throttles per registration id: a wait it names holds back that device only.
        #expect(result.waitIsTargets)
    }

    @Test func canonicalIDThatCouldLeaveItsPathIsNotTaken() {
        let body = #"{"registrationID":"../../evil"}"#
        let result = ADMProvider.classify(.success(HTTPResponse(status: 200, body: Array(body.utf8))), sent: Self.sent)
        #expect(result.disposition == .delivered)
        #expect(result.canonicalHandle == nil)
    }

    @Test func requestCarriesTheTypeVersionHeaders() {
        let request = ADMProvider.request(url: "https://api.amazon.com/messaging/registrations/x/messages", bearer: "tok", body: Array("{}".utf8))
        let headers = Dictionary(uniqueKeysWithValues: request.headers.map { ($0.0, $0.1) })
        #expect(headers["Authorization"] == "Bearer tok")
        #expect(headers["X-Amzn-Type-Version"] == "com.amazon.device.messaging.ADMMessage@1.0")
        #expect(headers["X-Amzn-Accept-Type"] == "com.amazon.device.messaging.ADMSendResult@1.0")
        #expect(headers["Content-Type"] == "application/json")
    }
}
