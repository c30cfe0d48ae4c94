/// A notification in one platform's native format, rendered once per job and platform and shared
/// by every target of that platform. Providers add only the per-device part (token, channel).
public enum RenderedNotification: Sendable, Equatable {
    case apns(APNsNotification)
    case fcm(FCMNotification)
    case wns(WNSNotification)
    case web(WebPushNotification)
    case hms(HMSNotification)
    case adm(ADMNotification)

    public var platform: Platform {
        switch self {
        case .apns: return .apns
        case .fcm: return .fcm
        case .wns: return .wns
        case .web: return .web
        case .hms: return .hms
        case .adm: return .adm
        }
    }

    /// The bytes a sandbox or hub sends (FCM: the v1 envelope without a target; HMS: with no token).
    public var body: [UInt8] {
        switch self {
        case .apns(let n): return n.payload
        case .fcm(let n): return JSONValue.object([("message", n.message)]).encoded()
        case .wns(let n): return n.body
        case .web(let n): return n.payload
        case .hms(let n): return n.body(tokens: [])
        case .adm(let n): return n.body
        }
    }
}

public struct APNsNotification: Sendable, Equatable {
    /// The JSON payload (`{"aps":{…}}`), at most `APNsNotification.maxPayloadBytes`: `rendered`
    /// with a tracked push's `id` in its place.
    public var payload: [UInt8] { rendered.stamped(id) }
    /// The payload as rendered for the job, shared by every device (a tracked job's with the id's place).
    public internal(set) var rendered: IDTemplate
    /// A tracked push's id (`RenderedNotification.stamped`), written into the payload where it is sent.
    public internal(set) var id: NotificationIDText?
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
        rendered = IDTemplate(payload)
        self.pushType = pushType
        self.priority = priority
        self.ttlSeconds = ttlSeconds
        self.collapseID = collapseID
    }

    /// The payload's size (a stamped one's is its rendering's).
    public var payloadCount: Int { rendered.count }

    /// Appends the payload, the id in its place, to `out` (an outbox line): no array of its own.
    public func writePayload(into out: inout [UInt8]) { rendered.write(id, into: &out) }

    /// Equal when they send the same (a stamped one and one rendered with that id alike).
    public static func == (a: APNsNotification, b: APNsNotification) -> Bool {
        a.payload == b.payload && a.pushType == b.pushType && a.priority == b.priority
            && a.ttlSeconds == b.ttlSeconds && a.collapseID == b.collapseID
    }
}

public struct FCMNotification: Sendable, Equatable {
    /// The FCM v1 `message` object without a target (`token`/`topic`/`condition`).
    public var message: JSONValue {
        guard let id, let idMember, case .object(var pairs) = rendered,
              let d = pairs.lastIndex(where: { $0.0 == "data" }), case .object(var data) = pairs[d].1,
              let i = data.lastIndex(where: { $0.0 == idMember }) else { return rendered }
        data[i].1 = .string(id.text)
        pairs[d].1 = .object(data)
        return .object(pairs)
    }
    /// `message` as JSON, written once: a campaign sends the same message to every device.
    public var encodedMessage: [UInt8] { encoded.stamped(id) }
    /// As rendered once for the job (a tracked one with `PayloadRenderer.idSlot` where ids go).
    private let rendered: JSONValue
    private let encoded: IDTemplate
    /// Its members but a `token`, each with a leading comma: what follows the token in `body`.
    private let membersAfterToken: IDTemplate
    /// A tracked push's id (`stamped`), put in its place only where the message is written: a
    /// campaign stamps every device, and each provider writes one encoding of the message.
    private var id: NotificationIDText?
    /// The member of `data` whose value is the id's slot (`notification_id`, `secureId`): the
    /// renderer adds it after the job's own, so it is the last of that name.
    private let idMember: String?

    public static let maxMessageBytes = 4096

    public init(message: JSONValue) { self.init(message: message, idMember: nil) }

    /// `idMember`: the member whose value is the id's slot (a tracked or secure rendering's).
    init(message: JSONValue, idMember: String?) {
        rendered = message
        let encoded = message.encoded()
        var members: [UInt8] = []
        if case .object(let pairs) = message {
            for (k, v) in pairs where k != "token" {
                members.append(UInt8(ascii: ","))
                JSONValue.writeString(k, into: &members)
                members.append(UInt8(ascii: ":"))
                v.write(into: &members)
            }
        }
        self.encoded = IDTemplate(encoded, slot: idMember.flatMap { IDTemplate.slot(ofMember: $0, in: encoded) })
        membersAfterToken = IDTemplate(members, slot: idMember.flatMap { IDTemplate.slot(ofMember: $0, in: members) })
        self.idMember = idMember
        id = nil
    }

    /// Equal when they send the same message (a stamped one and one rendered with that id alike).
    public static func == (a: FCMNotification, b: FCMNotification) -> Bool {
        a.encodedMessage == b.encodedMessage && a.message == b.message
    }

    /// This message with `id` in its id's place (the encodings share the job's bytes until written).
    consuming func stamped(_ id: NotificationIDText) -> FCMNotification {
        var stamped = self
        stamped.id = id
        return stamped
    }

    /// The size of `{"message":…}`, what FCM holds to `maxMessageBytes` (an id is as long as its slot).
    public var envelopeBytes: Int { encoded.count + #"{"message":}"#.utf8.count }

    /// Appends `message` as JSON, the id in its place, to `out` (an outbox line).
    public func writeMessage(into out: inout [UInt8]) { encoded.write(id, into: &out) }

    /// `{"message":{"token":…, …}}`: the request body for one device. The token goes first.
    public func body(token: String) -> [UInt8] { body(target: "token", token) }

    /// `{"message":{"<target>":…, …}}` with `target` one of `token`, `topic`, `condition`.
    public func body(target: String, _ value: String) -> [UInt8] {
        guard case .object = rendered else { return [] }
        var out: [UInt8] = []
        out.reserveCapacity(membersAfterToken.count + value.utf8.count + 32)
        out.append(contentsOf: #"{"message":{""#.utf8)
        out.append(contentsOf: target.utf8)
        out.append(contentsOf: #"":"#.utf8)
        JSONValue.writeString(value, into: &out)
        membersAfterToken.write(id, into: &out)
        out.append(UInt8(ascii: "}"))
        out.append(UInt8(ascii: "}"))
        return out
    }
}

public struct WNSNotification: Sendable, Equatable {
    /// Toast/tile/badge XML, or raw bytes: `rendered` with a tracked push's `id` in its place.
    public var body: [UInt8] { rendered.stamped(id) }
    /// `body` as one JSON string (invalid UTF-8 repaired): what the sandbox's outbox shows for
    /// every device the campaign reaches.
    public var bodyAsJSONString: [UInt8] { renderedAsJSONString.stamped(id) }
    /// The body as rendered for the job, and as one JSON string, written once and shared by every
    /// device (a tracked job's with the id's place in both).
    private let rendered: IDTemplate
    private let renderedAsJSONString: IDTemplate
    /// A tracked push's id (`RenderedNotification.stamped`), written into the body where it is sent.
    public internal(set) var id: NotificationIDText?
    /// `X-WNS-Type`: `wns/toast` (default), `wns/tile`, `wns/badge` or `wns/raw`.
    public var type: String
    /// `X-WNS-TTL`, seconds.
    public var ttlSeconds: Int?
    /// `X-WNS-Tag` (from `collapse_id`): a newer notification with the same tag replaces it.
    public var tag: String?

    public static let maxPayloadBytes = 5000

    public var contentType: String { type == "wns/raw" ? "application/octet-stream" : "text/xml" }

    public init(body: [UInt8], type: String = "wns/toast", ttlSeconds: Int? = nil, tag: String? = nil) {
        self.init(body: body, idSlot: nil, type: type, ttlSeconds: ttlSeconds, tag: tag)
    }

    /// `idSlot`: where a tracked rendering's id goes in `body`.
    init(body: [UInt8], idSlot: Int?, type: String, ttlSeconds: Int?, tag: String?) {
        rendered = IDTemplate(body, slot: idSlot)
        var quoted: [UInt8] = []
        JSONValue.writeString(String(decoding: body, as: UTF8.self), into: &quoted)
        // The slot in the quoted form: after the opening quote and the quoted bytes before it
        // (the slot's own characters need no escaping, nor do an id's).
        let quotedSlot = rendered.slot.map { slot -> Int in
            var before: [UInt8] = []
            JSONValue.writeString(String(decoding: body[..<slot], as: UTF8.self), into: &before)
            return before.count - 1
        }
        renderedAsJSONString = IDTemplate(quoted, slot: quotedSlot)
        id = nil
        self.type = type
        self.ttlSeconds = ttlSeconds
        self.tag = tag
    }

    /// The body's size (a stamped one's is its rendering's).
    public var bodyCount: Int { rendered.count }

    /// Appends `bodyAsJSONString`, the id in its place, to `out` (an outbox line).
    public func writeBodyAsJSONString(into out: inout [UInt8]) { renderedAsJSONString.write(id, into: &out) }

    /// Equal when they send the same (a stamped one and one rendered with that id alike).
    public static func == (a: WNSNotification, b: WNSNotification) -> Bool {
        a.body == b.body && a.type == b.type && a.ttlSeconds == b.ttlSeconds && a.tag == b.tag
    }
}

/// A Web Push message before encryption: the JSON the site's service worker reads with
/// `event.data.json()`, and the RFC 8030 headers. Each device gets its own encryption of it.
public struct WebPushNotification: Sendable, Equatable {
    /// `{"title":…,"body":…,"data":{…}}`, at most `maxPlaintextBytes`: `rendered` with a tracked
    /// push's `id` in its place.
    public var payload: [UInt8] { rendered.stamped(id) }
    /// The payload as rendered for the job, shared by every device (a tracked job's with the id's place).
    public internal(set) var rendered: IDTemplate
    /// `TTL` (seconds the push service keeps it for an offline browser). Required by RFC 8030.
    public var ttlSeconds: Int
    /// `Urgency`: `high` or `normal` (RFC 8030 also has `low` and `very-low`).
    public var urgency: String
    /// `Topic`: a newer message with the same topic replaces an undelivered one.
    public var topic: String?
    /// The declarative form (`{"web_push":8030,…}`), when the job has a `url` to navigate to;
    /// the provider sends it to the subscriptions `providers.webpush.declarative` picks.
    public var declarativePayload: [UInt8]? { renderedDeclarative?.stamped(id) }
    public internal(set) var renderedDeclarative: IDTemplate?
    /// A tracked push's id (`RenderedNotification.stamped`), written into the payload where it is sent.
    public internal(set) var id: NotificationIDText?

    /// One aes128gcm record of 4096 bytes (what push services accept) less the 86-byte header
    /// (salt 16, rs 4, idlen 1, keyid 65), the 16-byte tag and the padding delimiter.
    public static let maxPlaintextBytes = 4096 - 86 - 16 - 1
    /// Without `ttl_seconds`: four weeks, as FCM keeps a message by default.
    public static let defaultTTLSeconds = 2_419_200
    /// RFC 8030 §5.4: at most 32 characters of the base64url alphabet.
    public static let maxTopicLength = 32

    public init(payload: [UInt8], ttlSeconds: Int = defaultTTLSeconds, urgency: String = "normal", topic: String? = nil,
                declarativePayload: [UInt8]? = nil) {
        rendered = IDTemplate(payload)
        self.ttlSeconds = ttlSeconds
        self.urgency = urgency
        self.topic = topic
        renderedDeclarative = declarativePayload.map { IDTemplate($0) }
    }

    /// Appends the payload, the id in its place, to `out` (an outbox line).
    public func writePayload(into out: inout [UInt8]) { rendered.write(id, into: &out) }

    /// Equal when they send the same (a stamped one and one rendered with that id alike).
    public static func == (a: WebPushNotification, b: WebPushNotification) -> Bool {
        a.payload == b.payload && a.declarativePayload == b.declarativePayload && a.ttlSeconds == b.ttlSeconds
            && a.urgency == b.urgency && a.topic == b.topic
    }
}
