import Foundation
import Testing
import PushspoolCore
@testable import PushspoolKit

/// WebKit's declarative Web Push: which subscriptions get it, and what the fake push service
/// reads after decrypting it (it refuses a declarative message Safari could not show).
@Suite(.enabled(if: Paths.nodeAvailable), .serialized)
struct WebPushDeclarativeTests {
    static let job = #"{"to_tag": "campaign", "pns": "web", "title": "Goal", "message": "2-1", "url": "https://example.com/m/42", "badge": 3, "collapse_id": "match-42"}"#

    @Test func alwaysSendsTheDeclarativeForm() throws {
        let s = try WebPushIntegrationTests.Setup(declarative: "always")
        let fake = try s.fake(["subscriptions": "3"], file: "subs.jsonl")
        let d = try s.runOnce("goal", Self.job)
        #expect(d.filter { $0.status == .delivered }.count == 3)
        let state = fake.state()
        #expect((state.list("problems") ?? ["?"]).isEmpty, "\(state["problems"] ?? "")")
        #expect(state.int("declarative") == 3 && state.int("classic") == 0)
        #expect(state.dict("plaintexts")?["web-0"] as? [String]
            == [#"{"web_push":8030,"notification":{"title":"Goal","body":"2-1","navigate":"https://example.com/m/42","tag":"match-42"},"app_badge":3}"#])
        #expect(state.dict("headers")?.dict("web-0")?.str("topic") == "match-42")
    }

    @Test func neverAndJobsWithoutURLSendTheClassicForm() throws {
        let s = try WebPushIntegrationTests.Setup(declarative: "never")
        let fake = try s.fake(["subscriptions": "2"], file: "subs.jsonl")
        try s.runOnce("goal", Self.job)
        let state = fake.state()
        #expect(state.int("declarative") == 0 && state.int("classic") == 2)
        #expect(state.dict("plaintexts")?["web-0"] as? [String]
            == [#"{"title":"Goal","body":"2-1","url":"https://example.com/m/42"}"#])
    }

    @Test(arguments: [
        (WebPushConfig.Declarative.auto, "web.push.apple.com", true),
        (.auto, "fcm.googleapis.com", false),
        (.auto, "notpush.apple.com", false),
        (.always, "fcm.googleapis.com", true),
        (.never, "web.push.apple.com", false),
    ])
    func whoGetsTheDeclarativeForm(mode: WebPushConfig.Declarative, host: String, expected: Bool) {
        #expect(WebPushProvider.wantsDeclarative(mode, endpointHost: host) == expected)
    }
}
