import Foundation

/// A validated spool job. Built by `JobParser`; the engine only ever sees valid jobs.
public struct Job: Sendable, Equatable {
    /// Idempotency key (`[A-Za-z0-9._-]{1,128}`); the result log is `results/<id>.jsonl`.
    public var id: String
    /// The spool file name the job arrived as (e.g. `campaign-42.json`).
    public var file: String
    public var kind: Kind

    public enum Kind: Sendable, Equatable {
        case send(SendJob)
        case register(Registration)
        case unregister(Unregistration)
    }

    public init(id: String, file: String, kind: Kind) {
        self.id = id
        self.file = file
        self.kind = kind
    }
}

/// Who a send job is for. Exactly one per job.
public enum Audience: Sendable, Equatable {
    /// `to_tag`: one tag.
    case tag(String)
    /// `tags`: a tag expression, kept as written for hubs that evaluate it themselves.
    case expression(TagExpression, source: String)
    /// `broadcast`: every registered device of the job's platforms.
    case broadcast
    /// `fcm_topic`: FCM fans the message out to the topic's subscribers (one request).
    case fcmTopic(String)
    /// `fcm_condition`: FCM fans it out to the devices the condition matches (one request).
    case fcmCondition(String)
    /// `apns_channel`: APNs fans a Live Activity update out to the channel's subscribers (one
    /// broadcast request, iOS 18).
    case apnsChannel(String)

    /// The expression a registry evaluates (`nil` for broadcast). Never asked of an audience
    /// the service resolves (`serviceTarget`): those go to no registry at all.
    public var tagExpression: TagExpression? {
        switch self {
        case .tag(let t): return .tag(t)
        case .expression(let e, _): return e
        case .broadcast, .fcmTopic, .fcmCondition, .apnsChannel: return nil
        }
    }

    /// The text sent to a hub as `ServiceBusNotification-Tags` (`nil` for broadcast).
    public var hubTags: String? {
        switch self {
        case .tag(let t): return t
        case .expression(_, let source): return source
        case .broadcast, .fcmTopic, .fcmCondition, .apnsChannel: return nil
        }
    }

    /// For an audience the service itself resolves, the FCM message field that names it and
    /// its value (also the result log's field): `topic`/`condition`, or `channel` for an APNs
    /// broadcast channel. Nil for the registry's.
    public var serviceTarget: (field: String, value: String)? {
        switch self {
        case .fcmTopic(let t): return ("topic", t)
        case .fcmCondition(let c): return ("condition", c)
        case .apnsChannel(let id): return ("channel", id)
        default: return nil
        }
    }
}

public struct SendJob: Sendable, Equatable {
    public var audience: Audience
    /// Platforms in the order first written, without duplicates (`gcm` folded into `fcm`).
    public var platforms: [Platform]
    public var message: Message
    /// Scheduled send: the job waits in the spool until then.
    public var notBefore: Date?
    /// Per-language texts (`localized`): a device whose `lang` best-matches a key gets that text,
    /// every other device `message`.
    public var localized: [LanguageTag: LocalizedText]
    /// Pacing (`spread_over_seconds`): the targets are sent evenly over this many seconds.
    public var spreadOverSeconds: Int?
    /// `app`: whose devices the audience is resolved among (§ Several apps).
    public var apps: AppSelection = .defaultApp
    /// `capped`: a campaign counted against each device's app's `frequency_cap`.
    public var capped = false
    /// `local_time`/`local_date`: each device when its own clock reads that time (in waves).
    public var localDelivery: LocalDelivery?
    /// `quiet_hours`: this job's, over its apps' (`apps.<app>.quiet_hours`).
    public var quietHours: QuietHours?
    /// `secure`: each target gets a notification id instead of the text, which its app fetches
    /// with its user's credentials (§ The app talks back). Always tracked.
    public var secure = false
    /// `placeholder` (secure jobs only): the visible alert an APNs Notification Service
    /// Extension replaces with the fetched text.
    public var placeholder: String?
    /// `track`: each push carries a notification id that apps report events against.
    public var track = false
    /// `secure_ttl_seconds`: how long the content can be fetched (`contentLifetime`).
    public var secureTTLSeconds: Int?

    public init(audience: Audience, platforms: [Platform], message: Message, notBefore: Date? = nil,
                localized: [LanguageTag: LocalizedText] = [:], spreadOverSeconds: Int? = nil) {
        self.audience = audience
        self.platforms = platforms
        self.message = message
        self.notBefore = notBefore
        self.localized = localized
        self.spreadOverSeconds = spreadOverSeconds
    }

    /// How long a secure job's content is kept: `secure_ttl_seconds`, else its `ttl_seconds`
    /// (when not 0: a push the service may not keep is no reason to drop what it points to),
    /// else 7 days.
    public var contentLifetime: Int {
        if let secureTTLSeconds { return secureTTLSeconds }
        if let ttl = message.ttlSeconds, ttl > 0 { return ttl }
        return Self.defaultContentLifetime
    }

    public static let defaultContentLifetime = 7 * 24 * 3600

    /// The message in `language` (a key of `localized`), or the job's own message for nil.
    public func message(in language: LanguageTag?) -> Message {
        guard let language, let text = localized[language] else { return message }
        return message.localized(text)
    }
}

/// One language's text of a localized job; `from` still prefixes it.
public struct LocalizedText: Sendable, Equatable {
    public var message: String
    public var title: String?

    public init(message: String, title: String? = nil) {
        self.message = message
        self.title = title
    }
}

public enum Priority: String, Sendable, Equatable {
    case high, normal
}

/// What to say, independent of platform. `PayloadRenderer` maps it to each platform's native format.
public struct Message: Sendable, Equatable {
    public var text: String
    public var from: String?
    public var title: String?
    public var badge: Int?
    public var sound: String?
    public var data: [String: String]
    public var ttlSeconds: Int?
    public var priority: Priority?
    public var collapseID: String?
    /// Raw per-platform payloads that replace the rendered ones (`payload.apns`, `.fcm`, `.wns`).
    public var overrides: PayloadOverrides
    /// Push type, Live Activity and the fields only some platforms have.
    public var native: NativeFields

    public init(text: String, from: String? = nil, title: String? = nil, badge: Int? = nil,
                sound: String? = nil, data: [String: String] = [:], ttlSeconds: Int? = nil,
                priority: Priority? = nil, collapseID: String? = nil,
                overrides: PayloadOverrides = PayloadOverrides(), native: NativeFields = NativeFields()) {
        self.text = text
        self.from = from
        self.title = title
        self.badge = badge
        self.sound = sound
        self.data = data
        self.ttlSeconds = ttlSeconds
        self.priority = priority
        self.collapseID = collapseID
        self.overrides = overrides
        self.native = native
    }

    /// This message with another language's text and title (everything else kept).
    public func localized(_ text: LocalizedText) -> Message {
        var m = self
        m.text = text.message
        m.title = text.title
        return m
    }

    /// The text as shown to the user: `From <from>: <message>`, or the message alone.
    public var displayText: String {
        guard let from else { return text }
        return "From \(from): \(text)"
    }
}

public struct PayloadOverrides: Sendable, Equatable {
    public var apns: JSONValue?
    public var fcm: JSONValue?
    public var wns: String?

    public init(apns: JSONValue? = nil, fcm: JSONValue? = nil, wns: String? = nil) {
        self.apns = apns
        self.fcm = fcm
        self.wns = wns
    }
}

/// A device registration, from a `register` job, the CLI or an import line.
public struct Registration: Sendable, Equatable {
    /// Installation id; generated when absent.
    public var id: String?
    public var platform: Platform
    public var handle: String
    public var tags: [String]
    /// The user's language (BCP 47), for `localized` jobs.
    public var lang: LanguageTag?
    /// The device's app; nil: the default app.
    public var app: String?
    /// APNs only: the token's environment; nil: the app's APNs provider's `environment`.
    public var environment: APNsEnvironment?
    /// APNs only: which of Apple's tokens the handle is; nil: `device`.
    public var tokenKind: APNsTokenKind?
    /// The user's IANA time zone (`ZoneName`), for `local_time` jobs; nil: the app's `default_tz`.
    public var tz: String?

    public init(id: String?, platform: Platform, handle: String, tags: [String], lang: LanguageTag? = nil,
                app: String? = nil, environment: APNsEnvironment? = nil, tokenKind: APNsTokenKind? = nil, tz: String? = nil) {
        self.id = id
        self.platform = platform
        self.handle = handle
        self.tags = tags
        self.lang = lang
        self.app = app
        self.environment = environment
        self.tokenKind = tokenKind
        self.tz = tz
    }
}

public enum Unregistration: Sendable, Equatable {
    case id(String)
    /// A handle is unique per app and platform: this one in `app` (nil: the default app).
    case handle(String, app: String? = nil)
}
