@testable import PushspoolHTTP
import Testing
@testable import PushspoolKit

/// The header list a transfer hands to curl (built in one block, not with `curl_slist_append`).
struct CurlTransferTests {
    static func lines(_ headers: [(String, String)]) -> [String] {
        CurlTransfer(request: HTTPRequest(url: "https://api.example/3/device/ab", headers: headers),
                     completion: { _ in }).headerLines
    }

    @Test func headersInOrderThenBlanksForCurlDefaults() {
        #expect(Self.lines([("authorization", "bearer J.W.T"), ("apns-topic", "com.example.app"), ("apns-id", "u-1"),
                            ("content-type", "application/json")])
            == ["authorization: bearer J.W.T", "apns-topic: com.example.app", "apns-id: u-1",
                "content-type: application/json", "Accept:", "Expect:"])
    }

    @Test func noHeaders() {
        #expect(Self.lines([]) == ["Content-Type:", "Accept:", "Expect:"])
    }

    @Test func givenDefaultsAreNotBlanked() {
        #expect(Self.lines([("Accept", "application/json"), ("EXPECT", ""), ("Content-Type", "text/xml")])
            == ["Accept: application/json", "EXPECT: ", "Content-Type: text/xml"])
    }
}
