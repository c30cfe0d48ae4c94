extension PayloadRenderer {
    /// Web Push: `{"title":…,"body":"From bob: hi","data":{…}}` (title and data only when the job
    /// has them), `TTL` from `ttl_seconds`, `Urgency` from `priority`, `Topic` from `collapse_id`.
    static func renderWeb(_ message: Message) throws(RenderError) -> WebPushNotification {
        var pairs: [(String, JSONValue)] = []
        if let title = message.title { pairs.append(("title", .string(title))) }
        pairs.append(("body", .string(message.displayText)))
        if !message.data.isEmpty {
            pairs.append(("data", .object(message.data.keys.sorted().map { ($0, .string(message.data[$0] ?? "")) })))
        }
        let payload = JSONValue.object(pairs).encoded()
        guard payload.count <= WebPushNotification.maxPlaintextBytes else {
            throw RenderError(field: "message",
                              message: "Web Push payload is \(payload.count) bytes (limit \(WebPushNotification.maxPlaintextBytes) before encryption)")
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
                                   topic: topic)
    }
}
