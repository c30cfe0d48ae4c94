import Foundation
import Testing
import PushspoolCore

/// What a failure means and what to do: one table, read by the dashboard and copied into the
/// Provider setup article from here.
@Suite struct FailureGuideTests {
    @Test(arguments: [
        ("apns", "400", "BadDeviceToken", "apns BadDeviceToken"),
        ("apns", "410", "Unregistered", "apns Unregistered"),
        ("fcm", "400", "INVALID_ARGUMENT", "fcm INVALID_ARGUMENT"),
        ("fcm", "403", "SENDER_ID_MISMATCH", "fcm SENDER_ID_MISMATCH"),
        ("fcm", "404", "UNREGISTERED: gone", "fcm UNREGISTERED"),
        ("wns", "410", "", "wns 410"),
        ("web", "0", "host-not-allowed: x.example", "web host-not-allowed"),
        // A reason the table does not name falls back to its code, then to any platform's code.
        ("apns", "503", "SomethingNew", "any 503"),
        ("fcm", "transport", "connection reset", "any transport"),
        // Another platform's reason is not this one's.
        ("wns", "400", "BadDeviceToken", "unknown"),
    ])
    func eachFailureFindsItsEntry(platform: String, code: String, reason: String, expected: String) {
        let e = FailureGuide.entry(platform: platform, code: code, reason: reason)
        let name = e == FailureGuide.unknown ? "unknown" : "\(e.platform ?? "any") \(e.reason ?? e.code ?? "")"
        #expect(name == expected)
        #expect(!e.meaning.isEmpty && !e.action.isEmpty)
    }

    @Test func theProviderSetupArticleShowsThisTable() throws {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/PushspoolKit/PushspoolKit.docc/ProviderSetup.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        let table = FailureGuide.markdown()
        if !text.contains(table) { print("FailureGuide.markdown():\n" + table + "(end)") }
        #expect(text.contains(table), "Provider setup's failure table differs from FailureGuide.markdown() (printed above); paste it again")
    }
}
