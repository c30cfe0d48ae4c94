import PushspoolCore
import PushspoolHTTP

/// iOS 18 broadcast push: one `POST /4/broadcasts/apps/<bundle id>` with `apns-channel-id`
/// on the push host, which APNs fans out to every device subscribed to the channel (Providers.md,
/// "Broadcast channels", for where each rule comes from).
extension APNsRequestBuilder {
    /// The answer's fields a broadcast reads (Apple's request id is what the result log keeps).
    static let broadcastRead = ["apns-request-id", "apns-id", "retry-after"]

    /// `apns-expiration` is required on a broadcast: the job's `ttl_seconds` from `now`, else 0
    /// (deliver now; a channel with storage policy 1 keeps the latest for offline devices).
    public func buildBroadcast(channelID: String, notification n: APNsNotification, authorization: String, now: Int,
                               topic appTopic: String? = nil) -> Result<HTTPRequest, Refusal> {
        guard n.pushType == APNsPushType.liveactivity.rawValue else {
            return .failure(Refusal(disposition: .rejected, reason: "a broadcast channel carries Live Activity pushes only"))
        }
        guard n.payloadCount <= APNsNotification.maxPayloadBytes else {
            return .failure(Refusal(disposition: .rejected,
                                    reason: "\(APNsReason.payloadTooLarge.rawValue): \(n.payloadCount) bytes, limit \(APNsNotification.maxPayloadBytes)"))
        }
        let bundle = appTopic ?? topic
        let expiration = n.ttlSeconds.map { $0 <= 0 ? "0" : String(now + $0) } ?? "0"
        let headers: [(String, String)] = [
            ("authorization", authorization),
            ("apns-channel-id", channelID),
            ("apns-push-type", n.pushType),
            ("apns-priority", String(n.priority)),
            ("apns-expiration", expiration),
            ("content-type", "application/json"),
        ]
        return .success(HTTPRequest(method: "POST", url: "\(baseURL)/4/broadcasts/apps/\(bundle)", headers: headers,
                                    body: n.payload, timeout: timeout, unindexedHeaders: ["apns-channel-id"],
                                    responseHeaders: Self.broadcastRead))
    }
}
