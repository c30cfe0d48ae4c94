import Foundation
import Testing
@testable import PushspoolKit

/// Issue 33's integration test: one dispatcher, three apps on two APNs keys and two Firebase
/// projects, development devices on the sandbox host; every count comes from the fakes' own logs.
@Suite(.serialized) struct SeveralAppsIntegrationTests {
    @Test func eachJobReachesItsAppsDevicesWithTheirTopicOnTheRightHost() throws {
        let h = try SeveralAppsHarness()
        let chat = "com.acme.chat", shop = "com.acme.shop", legacy = "com.other.legacy"

        // The legacy app has no development device: the sandbox host is never connected to.
        try h.send("to-legacy", app: #""legacy""#, pns: #"["apns"]"#)
        #expect(h.deliveredByTopic(h.production) == [legacy: 2])
        #expect(h.settled(h.sandbox)["tlsConnections"] as? Int == 0)

        // One app: exactly its devices, its topic, each on its environment's host, its project.
        try h.send("to-shop", app: #""shop""#)
        #expect(h.deliveredByTopic(h.production) == [legacy: 2, shop: 1])
        #expect(h.deliveredByTopic(h.sandbox) == [shop: 2])
        #expect(h.delivered(h.fcmShop) == 1)
        #expect(h.delivered(h.fcmChat) == 0)
        #expect(Set(h.deliveries("to-shop").keys) == ["shop-p1", "shop-d1", "shop-d2", "shop-f1"])
        #expect(h.deliveries("to-shop").values.allSatisfy { $0.status == .delivered && $0.app == "shop" })
        #expect(h.deliveries("to-shop")["shop-f1"]?.provider == "fcm-shop")

        // No app: the default app only.
        try h.send("to-default", app: nil)
        #expect(h.deliveredByTopic(h.production) == [legacy: 2, shop: 1, chat: 2])
        #expect(h.deliveredByTopic(h.sandbox) == [shop: 2, chat: 1])
        #expect(h.delivered(h.fcmChat) == 2)
        #expect(h.delivered(h.fcmShop) == 1)

        // Every app: every device exactly once.
        try h.send("to-all", app: #""*""#)
        #expect(h.deliveredByTopic(h.production) == [legacy: 4, shop: 2, chat: 4])
        #expect(h.deliveredByTopic(h.sandbox) == [shop: 4, chat: 2])
        #expect(h.delivered(h.fcmChat) == 4)
        #expect(h.delivered(h.fcmShop) == 2)
        let all = h.deliveries("to-all")
        #expect(all.count == SeveralAppsHarness.devices.count)
        #expect(all.values.allSatisfy { $0.status == .delivered })
        for fake in [h.production, h.sandbox] {
            let s = h.settled(fake)
            #expect(s["duplicateDeliveries"] as? Int == 0)
            // The shared key minted one JWT for both its apps, across four runs and both hosts.
            #expect((s["jwtsByKey"] as? [String: Int])?[SeveralAppsHarness.acmeKey] == 1, "\(s["jwtsByKey"] ?? "-")")
            #expect((s["badJWTs"] as? Int) == 0)
        }
        #expect((h.settled(h.production)["jwtsByKey"] as? [String: Int])?[SeveralAppsHarness.otherKey] == 1)
        // Each project's own service account: one access token each.
        #expect(h.fcmChat.state()["tokensIssued"] as? Int == 1)
        #expect(h.fcmShop.state()["tokensIssued"] as? Int == 1)
    }

    /// One key revoked (every JWT of it answered 403 InvalidProviderToken) and one topic
    /// disallowed: the other key's apps, and the other app on the same key, deliver everything.
    /// A production token registered as a development device is refused by the sandbox host
    /// (BadDeviceToken): a wrong environment, the device is kept.
    @Test func oneKeyRevokedAndOneTopicDisallowedStopOnlyTheirApps() throws {
        let wrongEnvironment = "400b" + String(repeating: "0", count: 59) + "9"
        let h = try SeveralAppsHarness(apnsArgs: ["refuse-key": SeveralAppsHarness.otherKey, "disallow-topic": "com.acme.shop"],
                                       extraDevices: [#"{"id": "chat-wrong-env", "platform": "apns", "handle": "\#(wrongEnvironment)", "tags": ["all"], "app": "chat", "environment": "development"}"#])
        try h.send("everyone", app: #""*""#, pns: #"["apns"]"#)
        // Chat, on the shared key, delivered everything (the wrong-environment device aside).
        #expect(h.deliveredByTopic(h.production) == ["com.acme.chat": 2])
        #expect(h.deliveredByTopic(h.sandbox) == ["com.acme.chat": 1])
        let d = h.deliveries("everyone")
        for id in ["chat-p1", "chat-p2", "chat-d1"] { #expect(d[id]?.status == .delivered, "\(id)") }
        for id in ["shop-p1", "shop-d1", "shop-d2"] {
            #expect(d[id]?.status == .failed, "\(id)")
            #expect(d[id]?.reason == "TopicDisallowed (app shop, topic com.acme.shop)", "\(id): \(d[id]?.reason ?? "-")")
        }
        for id in ["legacy-p1", "legacy-p2"] {
            #expect(d[id]?.status == .failed, "\(id)")
            #expect(d[id]?.provider == "apns-other")
        }
        #expect(d["chat-wrong-env"]?.status == .failed)
        #expect(d["chat-wrong-env"]?.reason?.contains("wrong environment") == true, "\(d["chat-wrong-env"]?.reason ?? "-")")
        // Only apns-other paused; nothing pruned.
        let status = try h.cli(["status"])
        #expect(status.stdout.contains("apns-other"), "\(status.stdout)")
        #expect(!status.stdout.contains("apns-acme paused"), "\(status.stdout)")
        let count = try h.cli(["devices", "--count"])
        #expect(count.stdout == "\(SeveralAppsHarness.devices.count + 1)\n", "\(count.stdout)")
    }
}
