import PushspoolCore
import PushspoolHTTP
import Testing
@testable import PushspoolKit

/// WNS's classification table, from recorded response headers.
@Suite struct WNSResponseTests {
    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var status: Int
        var headers: [String: String]
        var disposition: Disposition
        var reason: String?
        var providerID: String? = nil
    }

    static let cases: [Case] = [
        Case(description: "200 received", status: 200, headers: ["x-wns-status": "received", "x-wns-msg-id": "3C7F2E"],
             disposition: .delivered, reason: nil, providerID: "3C7F2E"),
        Case(description: "200 dropped is accepted, reason recorded", status: 200, headers: ["x-wns-status": "dropped"],
             disposition: .delivered, reason: "dropped"),
        Case(description: "200 channelthrottled retries", status: 200,
             headers: ["x-wns-status": "channelthrottled", "x-wns-continue-after": "30"],
             disposition: .retry(after: 30), reason: "channelthrottled"),
        Case(description: "400 bad header", status: 400, headers: ["x-wns-error-description": "Invalid X-WNS-Type"],
             disposition: .rejected, reason: "Invalid X-WNS-Type"),
        Case(description: "401 expired token", status: 401, headers: ["x-wns-error-description": "Token expired"],
             disposition: .refreshCredentials, reason: "Token expired"),
        Case(description: "403 wrong app keeps the channel", status: 403, headers: [:],
             disposition: .senderRefused, reason: "HTTP 403"),
        Case(description: "404 unknown channel", status: 404, headers: [:], disposition: .deviceGone(since: nil), reason: "HTTP 404"),
        Case(description: "410 expired channel", status: 410, headers: ["x-wns-status": "dropped"],
             disposition: .deviceGone(since: nil), reason: "dropped"),
        Case(description: "406 with continue-after", status: 406, headers: ["x-wns-continue-after": "12"],
             disposition: .retry(after: 12), reason: "HTTP 406"),
        Case(description: "406 without continue-after", status: 406, headers: [:], disposition: .retry(after: 60), reason: "HTTP 406"),
        Case(description: "413 too large", status: 413, headers: [:], disposition: .rejected, reason: "HTTP 413"),
        Case(description: "500", status: 500, headers: [:], disposition: .retry(after: nil), reason: "HTTP 500"),
        Case(description: "503", status: 503, headers: [:], disposition: .retry(after: nil), reason: "HTTP 503"),
        Case(description: "unknown status kept raw", status: 200, headers: ["x-wns-status": "brandnew"],
             disposition: .delivered, reason: "brandnew"),
    ]

    @Test(arguments: cases)
    func classifies(_ c: Case) {
        let r = WNSResponse(HTTPResponse(status: c.status, headers: c.headers, httpVersion: 1)).result
        #expect(r.disposition == c.disposition)
        #expect(r.code == String(c.status))
        #expect(r.reason == c.reason)
        #expect(r.providerID == c.providerID)
    }
}
