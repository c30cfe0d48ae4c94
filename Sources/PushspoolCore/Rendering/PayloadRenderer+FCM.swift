extension PayloadRenderer {
    /// Message fields that choose the recipient; the provider adds `token` per device, so an
    /// override naming a target would send every device's copy somewhere else.
    public static let fcmTargetKeys: Set<String> = ["token", "topic", "condition"]

    /// FCM v1 message without a target: `{"notification":{…},"android":{…},"data":{"message":…}}`
    /// (order as in the v1 examples), then `payload.fcm`'s top-level keys merged over it.
    static func renderFCM(_ message: Message) throws(RenderError) -> FCMNotification {
        var pairs: [(String, JSONValue)] = []
        let native = message.native
        if let notification = titledNotification(message) { pairs.append(("notification", notification)) }
        var android: [(String, JSONValue)] = []
        if let priority = message.priority { android.append(("priority", .string(priority == .high ? "HIGH" : "NORMAL"))) }
        if let ttl = message.ttlSeconds { android.append(("ttl", .string("\(ttl)s"))) }  // a Duration string
        if let collapse = message.collapseID { android.append(("collapse_key", .string(collapse))) }
        if !android.isEmpty { pairs.append(("android", .object(android))) }

        // The legacy "notify users" apps read the text from data.message; keep that key first.
        var data: [(String, JSONValue)] = []
        let text = message.displayText
        if !text.isEmpty { data.append(("message", .string(text))) }
        for key in message.data.keys.sorted() {
            if key == "message" && !text.isEmpty {
                throw RenderError(field: "data.message", message: "is where FCM carries the message text; use another key")
            }
            if JobParser.isFCMReserved(key) {
                throw RenderError(field: "data.\(key)", message: "is reserved by FCM (from, notification, message_type, collapse_key, google*, gcm*)")
            }
            data.append((key, .string(message.data[key] ?? "")))
        }
        if let url = native.url {
            guard message.data["url"] == nil else {
                throw RenderError(field: "data.url", message: "is where FCM carries url for Android apps; use another key")
            }
            data.append(("url", .string(url)))
        }
        if !data.isEmpty { pairs.append(("data", .object(data))) }
        // The click target of a web app's notification; Android apps read data.url.
        if let url = native.url { pairs.append(("webpush", .object([("fcm_options", .object([("link", .string(url))]))]))) }
        if let label = native.analyticsLabel { pairs.append(("fcm_options", .object([("analytics_label", .string(label))]))) }

        var field = "message"
        if let override = message.overrides.fcm {
            field = "payload.fcm"
            guard case .object(let extra) = override else {
                throw RenderError(field: field, message: "must be an object, got \(override.typeName)")
            }
            for (key, value) in extra {
                if fcmTargetKeys.contains(key) {
                    throw RenderError(field: "payload.fcm.\(key)", message: "not allowed (pushspool sets the target of each message)")
                }
                if key == "data" { try checkStrings(value, field: "payload.fcm.data") }
                if let i = pairs.firstIndex(where: { $0.0 == key }) {
                    pairs[i].1 = value
                } else {
                    pairs.append((key, value))
                }
            }
        }
        let notification = FCMNotification(message: .object(pairs))
        let size = notification.envelopeBytes
        guard size <= FCMNotification.maxMessageBytes else {
            throw RenderError(field: field, message: "FCM message is \(size) bytes (limit \(FCMNotification.maxMessageBytes))")
        }
        return notification
    }

    /// `{"title", "body", "image"?}` when the job has a title (FCM's and HMS's `notification`).
    static func titledNotification(_ message: Message) -> JSONValue? {
        guard let title = message.title else { return nil }
        var notification: [(String, JSONValue)] = [("title", .string(title)), ("body", .string(message.displayText))]
        if let image = message.native.image { notification.append(("image", .string(image))) }
        return .object(notification)
    }

    /// FCM refuses non-string data values with INVALID_ARGUMENT for every device; refuse once here.
    private static func checkStrings(_ value: JSONValue, field: String) throws(RenderError) {
        guard case .object(let entries) = value else {
            throw RenderError(field: field, message: "must be an object of strings, got \(value.typeName)")
        }
        for (k, v) in entries where v.stringValue == nil {
            throw RenderError(field: "\(field).\(k)", message: "must be a string, got \(v.typeName)")
        }
    }
}
