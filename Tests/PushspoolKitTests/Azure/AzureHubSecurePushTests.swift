import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// A secure job on hub routes (the tutorial's own way): the hub gets the tutorial's shapes with
/// one id per job and platform, and the desk gives the text to a user one of whose devices the
/// job's audience matches, in that device's language, to no one else.
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct AzureHubSecurePushTests {
    @Test func hubSendsCarryOneIDPerPlatformAndItsUsersFetchTheText() throws {
        let b = try AzureHubIntegrationTests.Bench()
        let token = String(repeating: "ab", count: 32)
        for (args, id) in [(["--platform", "apns", "--handle", token, "--tag", "username:alice", "--tag", "vip", "--lang", "fr"], "alice-phone"),
                           (["--platform", "fcm", "--handle", "tok-bob", "--tag", "username:bob", "--tag", "vip"], "bob-phone"),
                           (["--platform", "fcm", "--handle", "tok-carol", "--tag", "username:carol"], "carol-phone")] {
            let r = try b.run(["register"] + args + ["--id", id])
            #expect(r.status == 0, "\(r.stderr)")
        }
        b.drop("vip", #"{"id":"vip","to_tag":"vip","pns":["apns","fcm"],"from":"bank","message":"your card is ready","secure":true,"localized":{"fr":{"message":"votre carte est prête"}}}"#)
        let r = try b.run()
        #expect(r.status == 0, "\(r.stderr)")
        #expect(b.summary("vip")["status"] as? String == "done", "\(b.results("vip"))")
        let sends = b.requests.filter { $0["path"] as? String == "/myhub/messages/" || ($0["path"] as? String)?.hasSuffix("/messages/") == true }
        #expect(sends.count == 2, "one send per platform (a secure push carries no language): \(sends.map { $0["path"] ?? "" })")
        var ids: [String: String] = [:]
        for send in sends {
            let body = try JSONSerialization.jsonObject(with: Data((send["body"] as? String ?? "").utf8)) as? [String: Any]
            #expect(!(send["body"] as? String ?? "").contains("card"))
            if let id = body?["secureId"] as? String {
                #expect((body?["aps"] as? [String: Int]) == ["content-available": 1])
                #expect((send["apns"] as? [String: String])?["apns-push-type"] == "background")
                ids["apns"] = id
            } else if let data = (body?["message"] as? [String: Any])?["data"] as? [String: String] ?? body?["data"] as? [String: String] {
                ids["fcm"] = data["secureId"]
            }
        }
        let apnsID = try #require(ids["apns"]), fcmID = try #require(ids["fcm"])
        #expect(apnsID != fcmID && NotificationID.parse(apnsID)?.isHub == true)

        let registry = try SQLiteRegistry(path: b.dir.path("spool/registry.sqlite"))
        defer { registry.close() }
        let desk = NotificationDesks.desk(registry: registry, spool: try Spool(root: b.dir.url.appendingPathComponent("spool"), create: false))
        let now = Date()
        guard case .content(let alice, _) = desk.fetch(id: apnsID, user: "alice", now: now) else {
            Issue.record("alice cannot read the hub id")
            return
        }
        #expect(alice.message == "From bank: votre carte est prête" && alice.platform == .apns)
        guard case .content(let bob, _) = desk.fetch(id: fcmID, user: "bob", now: now) else {
            Issue.record("bob cannot read the hub id")
            return
        }
        #expect(bob.message == "From bank: your card is ready")
        #expect(desk.fetch(id: fcmID, user: "carol", now: now) == .notFound, "carol's device is not in the audience")
        #expect(desk.fetch(id: apnsID, user: "bob", now: now) == .notFound, "bob has no APNs device in it")
        // Each user's report counts for their own device: two users, two receipts of one id.
        #expect(desk.record([NotificationEvent(id: fcmID, type: .opened, at: nil)], user: "bob", now: now) == [.recorded])
        let funnel = try #require(try desk.funnel(job: "vip"))
        // A hub send is one target per platform; its receipts are its users' devices'.
        #expect(funnel.total.delivered == 2 && funnel.total.received == 2 && funnel.total.opened == 1, "\(funnel.json.encodedString)")
    }
}
