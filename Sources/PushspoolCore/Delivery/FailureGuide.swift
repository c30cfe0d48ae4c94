/// What a failed delivery's code and reason mean and what to do about them: the one table the
/// dashboard's "failures by reason" reads (and the Provider setup article's table is checked against).
/// A result line's `code` is the provider's HTTP status (or `local`, `transport`); its `reason`
/// starts with the provider's own word (`BadDeviceToken`, `UNREGISTERED`), which is matched first.
public enum FailureGuide {
    public struct Entry: Sendable, Equatable {
        /// The platform it applies to (`apns`, `fcm`, `wns`, `web`, `hms`, `adm`), nil: any.
        public var platform: String?
        /// The reason's first word, matched before `code` (nil: any reason).
        public var reason: String?
        /// The code (HTTP status, `local`, `transport`), nil: any code.
        public var code: String?
        public var meaning: String
        public var action: String
    }

    /// Most specific first: a platform and reason, then a platform and code, then any platform.
    public static let entries: [Entry] = [
        e("apns", "BadDeviceToken", nil, "The token is not a valid APNs token for this host (often a development token sent to production).",
          "Nothing for a bad token (the device is removed); if many fail, check the app's APNs environment."),
        e("apns", "Unregistered", nil, "The app was uninstalled or the token expired on the device.",
          "Nothing: the device is removed from the registry."),
        e("apns", "DeviceTokenNotForTopic", nil, "The token belongs to another app (bundle id) than the job's topic.",
          "Check the app's bundle id (apps.<app>.apns.topic) against the app that registered."),
        e("apns", "PayloadTooLarge", nil, "The payload is over APNs' 4 KB (5 KB for VoIP).", "Shorten the message or its data."),
        e("apns", "TooManyRequests", nil, "Too many pushes to one device in a short time.", "Send less often to the same device; it was retried."),
        e("apns", "ExpiredProviderToken", nil, "The signed provider token is older than an hour.", "Check the host's clock; the token is renewed."),
        e("apns", "InvalidProviderToken", nil, "APNs refused the signing key (wrong key id or team id).", "Check apns.key_id, team_id and the .p8 key."),
        e("apns", "TopicDisallowed", nil, "The key may not push to this topic.", "Use a key of the team that owns the app."),
        e("apns", "BadTopic", nil, "The topic (bundle id) is malformed.", "Fix the app's apns.topic."),
        e("apns", "InvalidPushType", nil, "The push type does not fit the payload or topic.", "Check the job's push_type and the topic suffix."),
        e("fcm", "UNREGISTERED", nil, "The app instance is gone (uninstalled, token expired).", "Nothing: the device is removed from the registry."),
        e("fcm", "INVALID_ARGUMENT", nil, "FCM refused the message or token as malformed.", "Check the token's origin and the job's data and overrides."),
        e("fcm", "SENDER_ID_MISMATCH", nil, "The token was issued to another Firebase project.", "Use the service account of the app's project."),
        e("fcm", "QUOTA_EXCEEDED", nil, "The project or the device is over FCM's sending rate.", "Lower max_per_second for fcm; it was retried."),
        e("fcm", "THIRD_PARTY_AUTH_ERROR", nil, "FCM could not reach APNs or Web Push with the project's credentials.", "Check the APNs key uploaded to Firebase."),
        e("fcm", "UNAVAILABLE", nil, "FCM was overloaded.", "Nothing: it was retried with backoff."),
        e("fcm", "INTERNAL", nil, "FCM failed on its side.", "Nothing: it was retried with backoff."),
        e("wns", nil, "410", "The channel URI expired or the app was uninstalled.", "Nothing: the device is removed from the registry."),
        e("wns", nil, "404", "The channel URI is not valid.", "Nothing: the device is removed from the registry."),
        e("wns", nil, "406", "The channel is throttled.", "Send less often to this channel."),
        e("wns", nil, "413", "The notification is over 5 KB.", "Shorten the message or its data."),
        e("wns", nil, "403", "The app's package SID or secret does not own this channel.", "Check the wns credentials of the app."),
        e("web", nil, "410", "The browser subscription was removed.", "Nothing: the device is removed from the registry."),
        e("web", nil, "404", "The subscription is not known to the push service.", "Nothing: the device is removed from the registry."),
        e("web", nil, "413", "The encrypted payload is over 4 KB.", "Shorten the message or its data."),
        e("web", "host-not-allowed", nil, "The subscription's push service is not in allowed_hosts.", "Add the push service's host to allowed_hosts if it is genuine."),
        e("hms", nil, "80100000", "Huawei named this token illegal in a partly successful answer.",
          "Nothing: the device is removed from the registry; the request's other devices were delivered."),
        e("hms", nil, "80300007", "Huawei found every token of the request invalid.",
          "Nothing: the devices are removed from the registry."),
        e("hms", nil, "80300002", "The HMS app may not send pushes.",
          "Enable Push Kit for the app in AppGallery Connect (providers.hms.app_id)."),
        e("hms", nil, "80100016", "Huawei judged the message's content sensitive.",
          "Reword the message."),
        e("hms", nil, "80300011", "The HMS app may not send high-priority messages.",
          "Apply to Huawei for the permission, or send with priority normal."),
        e("hms", nil, "80600003", "Push Kit could not check pushspool's access token with Huawei's OAuth service.",
          "Check providers.hms.client_id and client_secret; the provider paused if it went on."),
        e("adm", "Unregistered", nil, "The app was uninstalled from the Fire device.",
          "Nothing: the device is removed from the registry."),
        e("adm", "InvalidRegistrationId", nil, "Amazon does not know this registration id.",
          "Nothing: the device is removed from the registry."),
        e("adm", "MessageTooLarge", nil, "The data is over ADM's 6 KB.",
          "Shorten the message or its data."),
        e(nil, "frequency cap", nil, "The device already had its app's allowed pushes for the period.", "Nothing, or raise the app's frequency cap."),
        e(nil, nil, "transport", "The provider could not be reached (connection, TLS or timeout).", "Check the network and the provider's status; it was retried."),
        e(nil, nil, "local", "pushspool refused it before sending (bad token, payload or credentials).", "The reason names the field to fix."),
        e(nil, nil, "401", "The provider refused pushspool's credentials.", "Check and rotate the credentials of the provider route."),
        e(nil, nil, "403", "The provider refused pushspool's credentials for this target.", "Check the credentials of the provider route."),
        e(nil, nil, "429", "The provider asked pushspool to slow down.", "Lower max_per_second for the provider; it was retried."),
        e(nil, nil, "500", "The provider failed on its side.", "Nothing: it was retried with backoff."),
        e(nil, nil, "503", "The provider was unavailable.", "Nothing: it was retried with backoff."),
    ]

    private static func e(_ platform: String?, _ reason: String?, _ code: String?, _ meaning: String, _ action: String) -> Entry {
        Entry(platform: platform, reason: reason, code: code, meaning: meaning, action: action)
    }

    /// Said of a failure the table does not know.
    public static let unknown = Entry(platform: nil, reason: nil, code: nil,
                                      meaning: "The provider answered with a failure this table does not describe.",
                                      action: "Read the reason text; the provider's documentation explains it.")

    /// The table as the Provider setup article shows it (a test keeps its copy equal to this).
    public static func markdown() -> String {
        var lines = ["| platform | reason or code | what it means | what to do |", "|---|---|---|---|"]
        for e in entries {
            let key = e.reason.map { "`\($0)`" } ?? e.code.map { "`\($0)`" } ?? "—"
            lines.append("| \(e.platform ?? "any") | \(key) | \(e.meaning) | \(e.action) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The entry for a failure: a matching reason word first, then a matching code.
    public static func entry(platform: String?, code: String?, reason: String?) -> Entry {
        let word = reason.map { String($0.prefix { $0 != ":" && $0 != " " && $0 != "(" }) }
        func fits(_ e: Entry) -> Bool { e.platform == nil || e.platform == platform }
        if let word, let found = entries.first(where: { fits($0) && $0.reason != nil && ($0.reason == word || reason?.hasPrefix($0.reason!) == true) }) {
            return found
        }
        if let code, let found = entries.first(where: { fits($0) && $0.reason == nil && $0.code == code }) { return found }
        return unknown
    }
}
