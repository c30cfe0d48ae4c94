extension PayloadRenderer {
    /// Huawei Push Kit: with a `title`, a notification message (`notification` `{title, body,
    /// image?}`, `android.notification` with its `click_action`: open `url`, or start the app);
    /// always `data`, a string holding the JSON object `{"message": text, …job data, "url"?}` as
    /// the app's `RemoteMessage.getData()` reads it. `android` carries `urgency` (from
    /// `priority`), `ttl` (`"<n>s"`) and, for a notification, `tag` from `collapse_id` (a newer
    /// one with the same tag replaces it); a data message's `collapse_key` is a number from -1 to
    /// 100 at Huawei, so `collapse_id` there must be one. `data` comes last, where a tracked
    /// job's id goes.
    static func renderHMS(_ message: Message) throws(RenderError) -> HMSNotification {
        var pairs: [(String, JSONValue)] = []
        let native = message.native
        if let notification = titledNotification(message) { pairs.append(("notification", notification)) }
        var android = hmsAndroid(message)
        if message.title != nil {
            let click: JSONValue = native.url.map { .object([("type", .int(2)), ("url", .string($0))]) } ?? .object([("type", .int(3))])
            var notification: [(String, JSONValue)] = [("click_action", click)]
            if let tag = message.collapseID { notification.append(("tag", .string(tag))) }
            android.append(("notification", .object(notification)))
        } else if let collapse = message.collapseID {
            guard let key = Int(collapse), (-1...100).contains(key) else {
                throw RenderError(field: "collapse_id",
                                  message: "an HMS data message (no title) collapses by Huawei's collapse_key, a number from -1 to 100")
            }
            android.append(("collapse_key", .int(Int64(key))))
        }
        if !android.isEmpty { pairs.append(("android", .object(android))) }
        let data = try stringData(message, platform: "HMS")
        if !data.isEmpty { pairs.append(("data", .string(String(decoding: JSONValue.object(data).encoded(), as: UTF8.self)))) }
        return try checkedHMS(HMSNotification(members: IDTemplate(members(pairs))), field: "message")
    }

    /// `urgency` and `ttl`, which every HMS message of the job carries (a secure one too). Huawei
    /// keeps a message at most 15 days ("1296000s"): a longer `ttl_seconds` is held to that.
    static func hmsAndroid(_ message: Message) -> [(String, JSONValue)] {
        var android: [(String, JSONValue)] = []
        if let priority = message.priority { android.append(("urgency", .string(priority == .high ? "HIGH" : "NORMAL"))) }
        if let ttl = message.ttlSeconds { android.append(("ttl", .string("\(min(ttl, HMSNotification.maxTTLSeconds))s"))) }
        return android
    }

    /// Within Huawei's 4,096 bytes (tokens not counted).
    static func checkedHMS(_ n: HMSNotification, field: String) throws(RenderError) -> HMSNotification {
        guard n.bodyBytes <= HMSNotification.maxBodyBytes else {
            throw RenderError(field: field, message: "HMS message body is \(n.bodyBytes) bytes without its tokens (limit \(HMSNotification.maxBodyBytes))")
        }
        return n
    }

    /// An object's members as JSON without its braces: `"a":1,"b":2`.
    static func members(_ pairs: [(String, JSONValue)]) -> [UInt8] {
        Array(JSONValue.object(pairs).encoded().dropFirst().dropLast())
    }

    /// The data both Android services without a display format of their own carry as strings:
    /// the text as `message` first (the legacy apps read it there), the job's `data`, then `url`
    /// and `image` when given. `message`, `url` and `image` of the job's own data are refused.
    static func stringData(_ message: Message, platform: String) throws(RenderError) -> [(String, JSONValue)] {
        var data: [(String, JSONValue)] = []
        let text = message.displayText
        if !text.isEmpty { data.append(("message", .string(text))) }
        for key in message.data.keys.sorted() {
            if key == "message" && !text.isEmpty {
                throw RenderError(field: "data.message", message: "is where \(platform) carries the message text; use another key")
            }
            data.append((key, .string(message.data[key] ?? "")))
        }
        for (key, value) in [("url", message.native.url), ("image", message.native.image)] {
            guard let value else { continue }
            guard message.data[key] == nil else {
                throw RenderError(field: "data.\(key)", message: "is where \(platform) carries \(key); use another key")
            }
            data.append((key, .string(value)))
        }
        return data
    }
}
