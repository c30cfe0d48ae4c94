extension PayloadRenderer {
    /// Amazon Device Messaging: `{"data":{…strings},"consolidationKey"?,"expiresAfter"?}`. ADM has
    /// no display format, the app builds the notification: `data` holds the text as `message`,
    /// `title`, the job's data, `url` and `image`; `consolidationKey` comes from `collapse_id`,
    /// `expiresAfter` from `ttl_seconds` (held to Amazon's 60 s to 31 days).
    static func renderADM(_ message: Message) throws(RenderError) -> ADMNotification {
        var data = try stringData(message, platform: "ADM")
        if let title = message.title {
            guard message.data["title"] == nil else {
                throw RenderError(field: "data.title", message: "is where ADM carries the title; use another key")
            }
            data.append(("title", .string(title)))
        }
        let n = admNotification(data: data, message: message)
        guard n.dataBytes <= ADMNotification.maxDataBytes else {
            throw RenderError(field: "message", message: "ADM data is \(n.dataBytes) bytes (limit \(ADMNotification.maxDataBytes))")
        }
        return n
    }

    /// The body for `data` with the job's consolidation key and lifetime; `slot`: the member of
    /// `data` a secure job's id goes in.
    static func admNotification(data: [(String, JSONValue)], message: Message, slot: String? = nil) -> ADMNotification {
        let dataJSON = JSONValue.object(data)
        let dataBytes = dataJSON.encoded().count
        // `data` last, so that the id's member is the body's last of its name.
        var pairs: [(String, JSONValue)] = []
        if let key = message.collapseID { pairs.append(("consolidationKey", .string(key))) }
        // Amazon takes 60 s to 31 days.
        if let ttl = message.ttlSeconds { pairs.append(("expiresAfter", .int(Int64(min(max(ttl, 60), 2_678_400))))) }
        pairs.append(("data", dataJSON))
        let body = JSONValue.object(pairs).encoded()
        return ADMNotification(body: IDTemplate(body, slot: slot.flatMap { IDTemplate.slot(ofMember: $0, in: body) }), dataBytes: dataBytes)
    }
}
