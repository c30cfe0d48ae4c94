extension PayloadRenderer {
    /// Web Push: `{"title":…,"body":"From bob: hi","data":{…}}` (title and data only when the job
    /// has them), `TTL` from `ttl_seconds`, `Urgency` from `priority`, `Topic` from `collapse_id`.
    /// With `url`, the declarative form is rendered too (`{"web_push":8030,"notification":{"title",
    /// "body"?, "navigate", "tag"?, "data"?},"app_badge"?}`, WebKit's declarative Web Push), for the
    /// subscriptions the provider sends it to; `navigate` is required there, so a job without `url`
    /// goes to every subscription in the classic form (a service worker shows it).
    static func renderWeb(_ message: Message) throws(RenderError) -> WebPushNotification {
        var pairs: [(String, JSONValue)] = []
        if let title = message.title { pairs.append(("title", .string(title))) }
        pairs.append(("body", .string(message.displayText)))
        if let url = message.native.url { pairs.append(("url", .string(url))) }
        if let image = message.native.image { pairs.append(("image", .string(image))) }
        let data: JSONValue? = message.data.isEmpty
            ? nil : .object(message.data.keys.sorted().map { ($0, .string(message.data[$0] ?? "")) })
        if let data { pairs.append(("data", data)) }
        let payload = try checked(JSONValue.object(pairs).encoded(), form: "")
        var declarative: [UInt8]?
        if let url = message.native.url {
            var n: [(String, JSONValue)] = [("title", .string(message.title ?? message.displayText))]
            if message.title != nil { n.append(("body", .string(message.displayText))) }
            n.append(("navigate", .string(url)))
            if let tag = message.collapseID { n.append(("tag", .string(tag))) }
            if let data { n.append(("data", data)) }
            var top: [(String, JSONValue)] = [("web_push", .int(8030)), ("notification", .object(n))]
            if let badge = message.badge { top.append(("app_badge", .int(Int64(badge)))) }
            declarative = try checked(JSONValue.object(top).encoded(), form: " (declarative)")
        }
        var topic: String?
        if let collapseID = message.collapseID {
            let ok = collapseID.utf8.count <= WebPushNotification.maxTopicLength && collapseID.utf8.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                    || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
            }
            guard ok else {
                throw RenderError(field: "collapse_id",
                                  message: "goes to Web Push as the Topic header: at most \(WebPushNotification.maxTopicLength) characters of A-Z a-z 0-9 - _")
            }
            topic = collapseID
        }
        return WebPushNotification(payload: payload,
                                   ttlSeconds: message.ttlSeconds ?? WebPushNotification.defaultTTLSeconds,
                                   urgency: message.priority == .high ? "high" : "normal",
                                   topic: topic, declarativePayload: declarative)
    }

    /// Within one aes128gcm record.
    private static func checked(_ payload: [UInt8], form: String) throws(RenderError) -> [UInt8] {
        guard payload.count <= WebPushNotification.maxPlaintextBytes else {
            throw RenderError(field: "message",
                              message: "Web Push payload\(form) is \(payload.count) bytes (limit \(WebPushNotification.maxPlaintextBytes) before encryption)")
        }
        return payload
    }
}
