import Foundation
import Testing
@testable import PushspoolKit
import PushspoolCore

/// WNS tiles, badges and raw notifications, and Microsoft Entra authentication, through the real
/// binary to the fake WNS, which checks each type's X-WNS-Type, Content-Type and document, the
/// X-WNS-Tag length, and the Entra token request. Counted from the fake's log.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct WNSKindsIntegrationTests {
    static let jobs: [(String, String)] = [
        ("toast", #""message":"2-1","collapse_id":"score","ttl_seconds":300"#),
        ("tile", #""message":"2-1","wns_type":"tile","collapse_id":"score","ttl_seconds":300"#),
        ("badge", #""badge":7,"wns_type":"badge""#),
        ("raw", #""message":"2-1","data":{"match":"42"},"wns_type":"raw""#),
    ]

    func sendAll(_ h: PushCloudHarness, kinds: [(String, String)]) throws -> RunResult {
        for (kind, fields) in kinds {
            // One job per kind, each to its own channel.
            try h.register([("w-\(kind)", "wns", WNSIntegrationTests.channel(h.wns, "ok-\(kind)"))], tag: kind)
            try h.submit(kind, #"{"id":"\#(kind)","to_tag":"\#(kind)","pns":"wns",\#(fields)}"#)
        }
        return try h.runOnce()
    }

    @Test func tileBadgeAndRawReachTheFakeWithTheirHeaders() throws {
        let h = try PushCloudHarness(wnsArgs: [:])
        let run = try sendAll(h, kinds: Self.jobs)
        #expect(run.status == 0, "\(run.stderr)")
        for (kind, _) in Self.jobs {
            #expect(h.deliveries(kind).count == 1)
            #expect(h.deliveries(kind).values.allSatisfy { $0.str("status") == "delivered" }, "\(kind)")
        }
        let s = try #require(h.wns).state()
        #expect((s.list("problems") ?? ["?"]).isEmpty, "\(s["problems"] ?? "")")
        #expect(s.int("invalidRequests") == 0)
        #expect(s.dict("deliveredByType") as? [String: Int] == ["wns/toast": 1, "wns/tile": 1, "wns/badge": 1, "wns/raw": 1])
        let channels = s.dict("perChannel") ?? [:]
        let tile = try #require(channels.dict("ok-tile"))
        #expect(tile.str("contentType") == "text/xml" && tile.str("tag") == "score" && tile.str("ttl") == "300")
        #expect(tile.list("texts") as? [String] == ["2-1"])
        #expect(channels.dict("ok-toast")?.str("tag") == "score")
        #expect(channels.dict("ok-badge")?.list("texts") as? [String] == ["7"])
        let raw = try #require(channels.dict("ok-raw"))
        #expect(raw.str("type") == "wns/raw" && raw.str("contentType") == "application/octet-stream")
        #expect(raw.int("bytes") == #"{"message":"2-1","match":"42"}"#.utf8.count)
    }

    @Test func entraAuthGetsItsTokenFromTheTenantAndSendsToastAndRaw() throws {
        let tenant = "contoso.onmicrosoft.com"
        let h = try PushCloudHarness(wnsArgs: ["tenant": tenant])
        let run = try sendAll(h, kinds: Self.jobs)
        #expect(run.status == 0, "\(run.stderr)")
        for kind in ["toast", "raw"] {
            #expect(h.deliveries(kind).values.allSatisfy { $0.str("status") == "delivered" }, "\(kind)")
        }
        // Windows App SDK apps take toast and raw only: refused here, never posted.
        for kind in ["tile", "badge"] {
            #expect(h.deliveries(kind).values.allSatisfy {
                $0.str("status") == "failed" && ($0.str("reason") ?? "").contains("toast and raw only")
            }, "\(kind)")
        }
        let s = try #require(h.wns).state()
        #expect(s.int("tokenRequests") == 1 && s.int("badGrants") == 0, "\(s["problems"] ?? "")")
        #expect(s.dict("tokenPaths") as? [String: Int] == ["/\(tenant)/oauth2/v2.0/token": 1])
        #expect(s.dict("deliveredByType") as? [String: Int] == ["wns/toast": 1, "wns/raw": 1])
        #expect(s.int("posts") == 2)
        #expect(!h.visibleText([run]).contains(PushCloudHarness.clientSecret))
    }
}
