// iOS Notification Service Extension for a pushspool secure job with a placeholder:
// APNs brings {"aps":{"alert":{"body":"<placeholder>"},"mutable-content":1},"secureId":"<id>"};
// this extension fetches the text with the signed-in user's credentials (the fetch counts as
// `received`) and shows it instead of the placeholder. The app reports `opened` (at the bottom).
// The app stores "Basic base64(user:password)" under "authorization" in the shared App Group.
import UserNotifications

let server = URL(string: "https://push.example.com")!
let shared = UserDefaults(suiteName: "group.com.example.app")

/// POST /api/notifications/{id}/events with {"type": type}; the answer does not matter here.
func report(_ id: String, _ type: String) async {
    guard let auth = shared?.string(forKey: "authorization") else { return }
    var request = URLRequest(url: server.appendingPathComponent("api/notifications/\(id)/events"))
    request.httpMethod = "POST"
    request.setValue(auth, forHTTPHeaderField: "Authorization")
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    request.httpBody = try? JSONSerialization.data(withJSONObject: ["type": type])
    _ = try? await URLSession.shared.data(for: request)
}

final class NotificationService: UNNotificationServiceExtension {
    override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        let content = (request.content.mutableCopy() as? UNMutableNotificationContent) ?? UNMutableNotificationContent()
        guard let id = request.content.userInfo["secureId"] as? String,
              let auth = shared?.string(forKey: "authorization") else { return contentHandler(content) }   // the placeholder stays
        Task {
            var get = URLRequest(url: server.appendingPathComponent("api/notifications/\(id)"))
            get.setValue(auth, forHTTPHeaderField: "Authorization")
            // {"Id": "...", "Payload": "<the text, in this device's language>", "Read": false}
            if let (data, response) = try? await URLSession.shared.data(for: get), (response as? HTTPURLResponse)?.statusCode == 200,
               let body = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let text = body["Payload"] as? String {
                content.body = text
                await report(id, "received")   // already counted by the fetch: the server answers "duplicate"
            }
            contentHandler(content)
        }
    }
    // Out of time: the placeholder is shown as it came.
}

// In the app: the user tapped the notification.
final class NotificationDelegate: NSObject, UNUserNotificationCenterDelegate {
    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse) async {
        guard let id = response.notification.request.content.userInfo["secureId"] as? String else { return }
        await report(id, response.actionIdentifier == UNNotificationDismissActionIdentifier ? "dismissed" : "opened")
    }
}
