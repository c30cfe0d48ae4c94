import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// Secure jobs through the real binary to the fake APNs, which checks that a payload with a
/// `secureId` has the shape and push type each of the tutorial's shapes needs (a background
/// push at priority 5 with `content-available: 1` alone, or an alert with `mutable-content: 1`);
/// the desk then gives each user the text its device would have shown.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct APNsSecurePushTests {
    @Test func bothSecureShapesPassTheFakesChecksAndFetchTheirText() throws {
        let s = try APNsSpool()
        try s.register(id: "alice", handle: APNsSpool.token("0000", 1), tag: "username:alice")
        try s.register(id: "bob", handle: APNsSpool.token("0000", 2), tag: "username:bob")
        s.drop("silent", #"{"id":"silent","tags":"username:alice || username:bob","pns":"apns","from":"bank","message":"you paid 3 EUR","secure":true}"#)
        s.drop("nse", #"{"id":"nse","to_tag":"username:alice","pns":"apns","message":"code 1234","secure":true,"placeholder":"New message"}"#)
        let run = try s.runOnce()
        #expect(run.status == 0, "\(run.stderr)")
        let state = waitForIdle(s.fake, answered: 3)
        #expect(state["byStatus"] as? [String: Int] == ["200": 3], "\(state["problems"] ?? [])")
        #expect(state["deliveredByPushType"] as? [String: Int] == ["background": 2, "alert": 1])
        let ids = state["secureIds"] as? [String] ?? []
        #expect(ids.count == 3 && Set(ids).count == 3)
        // Bob got only the background shape: at priority 5.
        let headers = state["lastHeaders"] as? [String: [String: Any]] ?? [:]
        let bobs = headers[APNsSpool.token("0000", 2)]
        #expect(bobs?["pushType"] as? String == "background" && bobs?["priority"] as? String == "5")
        #expect((bobs?["payload"] as? [String: Any])?.keys.sorted() == ["aps", "secureId"])

        let registry = try SQLiteRegistry(path: s.dir.path("spool/registry.sqlite"))
        defer { registry.close() }
        let desk = RegistryNotificationDesk(registry: registry)
        var texts: [String] = []
        for id in ids {
            for user in ["alice", "bob"] {
                if case .content(let c, _) = desk.fetch(id: id, user: user, now: Date()) { texts.append("\(user): \(c.message)") }
            }
        }
        #expect(texts.sorted() == ["alice: From bank: you paid 3 EUR", "alice: code 1234", "bob: From bank: you paid 3 EUR"])
    }

    /// The fake's own check: a secureId in an alert without mutable-content (a device would
    /// show the push before any extension fetched the text) is refused.
    @Test func theFakeRefusesASecureIDInTheWrongShape() throws {
        let s = try APNsSpool()
        try s.register(id: "alice", handle: APNsSpool.token("0000", 1), tag: "username:alice")
        s.drop("raw", #"{"id":"raw","to_tag":"username:alice","pns":"apns","payload":{"apns":{"aps":{"alert":"hi"},"secureId":"AQAAAAAAAAAHAAAAAAAAACoBmZmZmZmZmZmZmZmZmZmZmQ"}}}"#)
        let run = try s.runOnce()
        #expect(run.status == 0, "\(run.stderr)")
        let state = waitForIdle(s.fake, answered: 1)
        #expect(state["byReason"] as? [String: Int] == ["PayloadShape": 1])
        #expect((state["problems"] as? [String])?.contains { $0.contains("secure alert without mutable-content") } == true, "\(state["problems"] ?? [])")
    }
}
