/// A notification in one platform's native format, rendered once per job and platform and shared
/// by every target of that platform. Providers add only the per-device part (token, channel).
public enum RenderedNotification: Sendable, Equatable {
    case apns(APNsNotification)
    case fcm(FCMNotification)
    case wns(WNSNotification)
    case web(WebPushNotification)

    public var platform: Platform {
        switch self {
        case .apns: return .apns
        case .fcm: return .fcm
        case .wns: return .wns
        case .web: return .web
        }
    }

    /// The bytes a sandbox or hub sends (FCM: the v1 envelope without a target).
    public var body: [UInt8] {
        switch self {
        case .apns(let n): return n.payload
        case .fcm(let n): return JSONValue.object([("message", n.message)]).encoded()
        case .wns(let n): return n.body
        case .web(let n): return n.payload
        }
    }
}

public struct APNsNotification: Sendable, Equatable {
    /// The JSON payload (`{"aps":{…}}`), at most `APNsNotification.maxPayloadBytes`.
    public var payload: [UInt8]
    /// `apns-push-type`: `alert` unless an override says otherwise (`background`, `voip`, …).
    public var pushType: String
    /// `apns-priority`: 10, or 5 (required for background pushes, and for `priority: normal`).
    public var priority: Int
    /// Seconds the service may keep trying; `apns-expiration` = send time + this. `nil`: header omitted.
    public var ttlSeconds: Int?
    /// `apns-collapse-id`, at most 64 bytes.
    public var collapseID: String?

    public static let maxPayloadBytes = 4096
    public static let maxVoIPPayloadBytes = 5120

    public init(payload: [UInt8], pushType: String = "alert", priority: Int = 10,
                ttlSeconds: Int? = nil, collapseID: String? = nil) {
        self.payload = payload
        self.pushType = pushType
        self.priority = priority
        self.ttlSeconds = ttlSeconds
        self.collapseID = collapseID
    }
}

public struct FCMNotification: Sendable, Equatable {
    /// The FCM v1 `message` object without a target (`token`/`topic`/`condition`).
    public let message: JSONValue
    /// `message` as JSON, written once: a campaign sends the same message to every device.
    public let encodedMessage: [UInt8]
    /// Its members but a `token`, each with a leading comma: what follows the token in `body`.
    private let membersAfterToken: [UInt8]

    public static let maxMessageBytes = 4096

    public init(message: JSONValue) {
        self.message = message
        encodedMessage = message.encoded()
        var members: [UInt8] = []
        if case .object(let pairs) = message {
            for (k, v) in pairs where k != "token" {
                members.append(UInt8(ascii: ","))
                JSONValue.writeString(k, into: &members)
                members.append(UInt8(ascii: ":"))
                v.write(into: &members)
            }
        }
        membersAfterToken = members
    }

    private init(message: JSONValue, encodedMessage: [UInt8], membersAfterToken: [UInt8]) {
        self.message = message
        self.encodedMessage = encodedMessage
        self.membersAfterToken = membersAfterToken
    }

    /// This message with `id` in its id's place: its encodings patched in place, not written again.
    func stamped(_ id: [UInt8]) -> FCMNotification {
        FCMNotification(message: message.replacingString(PayloadRenderer.idSlot, with: String(decoding: id, as: UTF8.self)),
                        encodedMessage: IDSlot.put(id, into: encodedMessage), membersAfterToken: IDSlot.put(id, into: membersAfterToken))
    }

    /// `{"message":{"token":…, …}}`: the request body for one device. The token goes first.
    public func body(token: String) -> [UInt8] { body(target: "token", token) }

    /// `{"message":{"<target>":…, …}}` with `target` one of `token`, `topic`, `condition`.
    public func body(target: String, _ value: String) -> [UInt8] {
        guard case .object = message else { return [] }
        var out: [UInt8] = []
        out.reserveCapacity(membersAfterToken.count + value.utf8.count + 32)
        out.append(contentsOf: #"{"message":{""#.utf8)
        out.append(contentsOf: target.utf8)
        out.append(contentsOf: #"":"#.utf8)
        JSONValue.writeString(value, into: &out)
        out.append(contentsOf: membersAfterToken)
        out.append(UInt8(ascii: "}"))
        out.append(UInt8(ascii: "}"))
        return out
    }
}

public struct WNSNotification: Sendable, Equatable {
    /// Toast/tile/badge XML, or raw bytes.
    public let body: [UInt8]
    /// `body` as one JSON string (invalid UTF-8 repaired), written once: what the sandbox's
    /// outbox shows for every device the campaign reaches.
    public let bodyAsJSONString: [UInt8]
    /// `X-WNS-Type`: `wns/toast` (default), `wns/tile`, `wns/badge` or `wns/raw`.
    public var type: String
    /// `X-WNS-TTL`, seconds.
    public var ttlSeconds: Int?
    /// `X-WNS-Tag` (from `collapse_id`): a newer notification with the same tag replaces it.
    public var tag: String?

    public static let maxPayloadBytes = 5000

    public var contentType: String { type == "wns/raw" ? "application/octet-stream" : "text/xml" }

    public init(body: [UInt8], type: String = "wns/toast", ttlSeconds: Int? = nil, tag: String? = nil) {
        self.body = body
        var quoted: [UInt8] = []
        JSONValue.writeString(String(decoding: body, as: UTF8.self), into: &quoted)
        bodyAsJSONString = quoted
        self.type = type
        self.ttlSeconds = ttlSeconds
        self.tag = tag
    }
}

/// A Web Push message before encryption: the JSON the site's service worker reads with
/// `event.data.json()`, and the RFC 8030 headers. Each device gets its own encryption of it.
public struct WebPushNotification: Sendable, Equatable {
    /// `{"title":…,"body":…,"data":{…}}`, at most `maxPlaintextBytes`.
    public var payload: [UInt8]
    /// `TTL` (seconds the push service keeps it for an offline browser). Required by RFC 8030.
    public var ttlSeconds: Int
    /// `Urgency`: `high` or `normal` (RFC 8030 also has `low` and `very-low`).
    public var urgency: String
    /// `Topic`: a newer message with the same topic replaces an undelivered one.
    public var topic: String?
    /// The declarative form (`{"web_push":8030,…}`), when the job has a `url` to navigate to;
    /// the provider sends it to the subscriptions `providers.webpush.declarative` picks.
    public var declarativePayload: [UInt8]?

    /// One aes128gcm record of 4096 bytes (what push services accept) less the 86-byte header
    /// (salt 16, rs 4, idlen 1, keyid 65), the 16-byte tag and the padding delimiter.
    public static let maxPlaintextBytes = 4096 - 86 - 16 - 1
    /// Without `ttl_seconds`: four weeks, as FCM keeps a message by default.
    public static let defaultTTLSeconds = 2_419_200
    /// RFC 8030 §5.4: at most 32 characters of the base64url alphabet.
    public static let maxTopicLength = 32

    public init(payload: [UInt8], ttlSeconds: Int = defaultTTLSeconds, urgency: String = "normal", topic: String? = nil,
                declarativePayload: [UInt8]? = nil) {
        self.payload = payload
        self.ttlSeconds = ttlSeconds
        self.urgency = urgency
        self.topic = topic
        self.declarativePayload = declarativePayload
    }
}
