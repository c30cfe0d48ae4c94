import Foundation
import PushspoolHTTP
import PushspoolCore
import Testing
@testable import PushspoolKit

/// The hub's answers → dispositions, from a table of recorded-style responses.
@Suite struct AzureHubResponseTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var status: Int
        var headers: [String: String] = [:]
        var body: String = ""
        var expected: ProviderResult
        var description: String { name }
    }

    static func error(_ code: Int, _ detail: String) -> String {
        "<Error><Code>\(code)</Code><Detail>\(detail)</Detail></Error>"
    }

    static let table: [Case] = [
        Case(name: "201 with Location", status: 201,
             headers: ["location": "https://ns.servicebus.windows.net/myhub/messages/5b3f9a?api-version=2015-04", "trackingid": "t-1"],
             expected: ProviderResult(.delivered, code: "201", providerID: "5b3f9a")),
        Case(name: "200 with tracking id only", status: 200, headers: ["trackingid": "t-2"],
             expected: ProviderResult(.delivered, code: "200", providerID: "t-2")),
        Case(name: "201 with request id only", status: 201, headers: ["x-ms-request-id": "r-3"],
             expected: ProviderResult(.delivered, code: "201", providerID: "r-3")),
        Case(name: "201 bare", status: 201, expected: ProviderResult(.delivered, code: "201")),
        Case(name: "401 bad SAS", status: 401, body: error(401, "ExpiredToken: The token is expired."),
             expected: ProviderResult(.refreshCredentials, code: "401", reason: "ExpiredToken: The token is expired.")),
        Case(name: "403 quota with Retry-After", status: 403, headers: ["retry-after": "120"],
             body: error(403, "Quota exceeded."),
             expected: ProviderResult(.retry(after: 120), code: "403", reason: "quota exceeded: Quota exceeded.")),
        Case(name: "403 quota, HTTP-date Retry-After", status: 403, headers: ["retry-after": "Fri, 15 Jan 2027 08:00:30 GMT"],
             expected: ProviderResult(.retry(after: 30), code: "403", reason: "quota exceeded")),
        Case(name: "403 message too large", status: 403, body: error(403, "The notification payload is too large."),
             expected: ProviderResult(.rejected, code: "403", reason: "The notification payload is too large.")),
        Case(name: "400 bad format", status: 400, body: error(400, "Invalid ServiceBusNotification-Format."),
             expected: ProviderResult(.rejected, code: "400", reason: "Invalid ServiceBusNotification-Format.")),
        Case(name: "404 wrong hub", status: 404,
             expected: ProviderResult(.rejected, code: "404", reason: "no such hub or path (check namespace and hub name)")),
        Case(name: "413 entity too large", status: 413, body: "Request Entity Too Large",
             expected: ProviderResult(.rejected, code: "413", reason: "Request Entity Too Large")),
        Case(name: "429 throttled", status: 429, headers: ["retry-after": "7"],
             expected: ProviderResult(.retry(after: 7), code: "429", reason: "throttled")),
        Case(name: "500", status: 500, expected: ProviderResult(.retry(after: nil), code: "500", reason: "hub error")),
        Case(name: "503 with Retry-After", status: 503, headers: ["retry-after": "2"], body: error(503, "Busy"),
             expected: ProviderResult(.retry(after: 2), code: "503", reason: "Busy")),
        Case(name: "other 4xx", status: 405, expected: ProviderResult(.rejected, code: "405", reason: "rejected by the hub")),
    ]

    @Test(arguments: table)
    func classifies(_ c: Case) {
        let response = HTTPResponse(status: c.status, headers: c.headers, body: Array(c.body.utf8), httpVersion: 1)
        #expect(AzureHubResponse.classify(response, now: Self.now) == c.expected)
    }

    @Test func detailIsOneShortLine() {
        let long = String(repeating: "x", count: 500)
        #expect(AzureHubResponse.errorDetail(Array("<Error><Detail>a\n  b</Detail></Error>".utf8)) == "a b")
        #expect(AzureHubResponse.errorDetail(Array(long.utf8))?.count == 201)
        #expect(AzureHubResponse.errorDetail(Array("<html>oops</html>".utf8)) == nil)
    }

    @Test func unparsableRetryAfterIsIgnored() {
        #expect(RetryAfter.seconds("soon", now: Self.now) == nil)
        #expect(RetryAfter.seconds("-5", now: Self.now) == nil)
        #expect(RetryAfter.seconds(nil, now: Self.now) == nil)
    }
}
