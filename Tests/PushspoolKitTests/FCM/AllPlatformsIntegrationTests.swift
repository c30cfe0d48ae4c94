import Foundation
import Testing

/// One job to APNs, FCM (as its retired name `gcm`) and WNS: every fake gets its device in one run.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct AllPlatformsIntegrationTests {
    @Test func oneJobReachesAllThreeServices() throws {
        let h = try PushCloudHarness(fcmArgs: [:], wnsArgs: [:], apnsArgs: [:])
        let apnsToken = String(repeating: "ab", count: 32)
        try h.register([("i-apns", "apns", apnsToken), ("i-fcm", "gcm", "ok-1"),
                        ("i-wns", "wns", "\(try #require(h.wns).url)/ch/ok-1?token=x")])
        try h.submit("everywhere", #"{"to_tag": "username:alice", "pns": ["apns", "gcm", "wns"], "from": "bob", "message": "hi"}"#)
        let run = try h.runOnce()
        #expect(run.status == 0, "\(run.stderr)")
        let d = h.deliveries("everywhere")
        #expect(d["i-apns"]?.str("status") == "delivered")
        #expect(d["i-fcm"]?.str("status") == "delivered")
        #expect(d["i-wns"]?.str("status") == "delivered")
        #expect(h.summary("everywhere")?.int("delivered") == 3)
        #expect(try #require(h.fcm).state().dict("perToken")?.dict("ok-1")?.dict("message")?.dict("data") as? [String: String]
                == ["message": "From bob: hi"])
        #expect(try #require(h.wns).state().dict("perChannel")?.dict("ok-1")?.list("texts") as? [String] == ["From bob: hi"])
        // The fake writes its stats when the connection closes: wait for that, not just the exit.
        #expect(waitForIdle(try #require(h.apns), answered: 1).int("tokensDelivered") == 1)
    }
}
