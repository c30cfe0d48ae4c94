import Testing
import PushspoolCore
@testable import PushspoolKit

/// A hub or FCM-topic send is one per app: two apps may route one platform to two hubs with the
/// same tags, and a resumed job must skip only the one its log records.
@Suite struct FinishedTargetsAppsTests {
    @Test func aHubSendIsFinishedForItsOwnAppOnly() {
        var finished = FinishedTargets()
        finished.insert(platform: "apns", hubTags: "username:alice", app: "chat")
        finished.insert(platform: "fcm", service: "topic", "news", app: "chat")
        finished.seal()
        let hub = Recipient.hub(.tag("username:alice"))
        #expect(finished.contains(platform: .apns, recipient: hub, app: "chat"))
        #expect(!finished.contains(platform: .apns, recipient: hub, app: "shop"))
        #expect(finished.contains(platform: .fcm, recipient: .hub(.fcmTopic("news")), app: "chat"))
        #expect(!finished.contains(platform: .fcm, recipient: .hub(.fcmTopic("news")), app: "shop"))
    }

    @Test func aLogWrittenBeforeAppsStillResumes() {
        // Its delivery lines carry no app: the job had one, so platform and tags are enough.
        var finished = FinishedTargets()
        finished.insert(platform: "wns", hubTags: "follows_RedSox", app: nil)
        finished.seal()
        #expect(finished.contains(platform: .wns, recipient: .hub(.tag("follows_RedSox")), app: "default"))
        #expect(!finished.contains(platform: .wns, recipient: .hub(.tag("follows_Cardinals")), app: "default"))
    }
}
