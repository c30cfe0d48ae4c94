import Foundation

/// What Apple calls the push type (`apns-push-type`), chosen by a job's `push_type` (default
/// `alert`). Each type has its own topic suffix, priority rule, payload shape and size limit;
/// the wire strings live with the APNs request builder, the rules the parser enforces here.
public enum APNsPushType: String, Sendable, Equatable, CaseIterable {
    case alert, background, voip, liveactivity, location, complication, fileprovider, pushtotalk, widgets

    /// `alert, background, …` for messages.
    public static let names = allCases.map(\.rawValue).joined(separator: ", ")

    /// Apple's payload limit: 5 KB for VoIP, 4 KB for everything else.
    public var payloadLimit: Int { self == .voip ? APNsNotification.maxVoIPPayloadBytes : APNsNotification.maxPayloadBytes }

    /// Types whose payload carries no alert, sound or badge (a silent background push, a
    /// widget reload): the job's `message`, `title`, `badge` and `sound` have nowhere to go.
    public var isSilent: Bool { self == .background || self == .widgets }
}

/// A Live Activity push (`push_type: "liveactivity"`): the `aps` keys ActivityKit reads.
public struct LiveActivity: Sendable, Equatable {
    public enum Event: String, Sendable, Equatable, CaseIterable {
        case start, update, end
    }

    public var event: Event
    /// `content-state`: the activity's `ContentState`, as the app's Codable type decodes it.
    public var contentState: JSONValue?
    /// `timestamp`; nil: the moment the job is sent.
    public var timestamp: Date?
    /// `stale-date`.
    public var staleDate: Date?
    /// `dismissal-date` (`end` only).
    public var dismissalDate: Date?
    /// `relevance-score` among the app's activities.
    public var relevanceScore: Double?
    /// `attributes-type` and `attributes` (`start` only): the activity's `ActivityAttributes`.
    public var attributesType: String?
    public var attributes: JSONValue?

    public init(event: Event, contentState: JSONValue? = nil, timestamp: Date? = nil, staleDate: Date? = nil,
                dismissalDate: Date? = nil, relevanceScore: Double? = nil, attributesType: String? = nil,
                attributes: JSONValue? = nil) {
        self.event = event
        self.contentState = contentState
        self.timestamp = timestamp
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.attributesType = attributesType
        self.attributes = attributes
    }
}

/// `interruption_level`: how an alert may break through Focus (APNs `aps.interruption-level`).
public enum InterruptionLevel: String, Sendable, Equatable, CaseIterable {
    case passive, active
    case timeSensitive = "time-sensitive"
    case critical
}

/// `wns_type`: which WNS notification a job is (`X-WNS-Type`).
public enum WNSKind: String, Sendable, Equatable, CaseIterable {
    case toast, tile, badge, raw

    public var header: String { "wns/" + rawValue }
}

/// The fields of a job that exist on some platforms only (issue "Every kind of push"), each
/// mapped where the platform has it and ignored where it has not (README: the field table).
public struct NativeFields: Sendable, Equatable {
    public var pushType: APNsPushType = .alert
    public var liveActivity: LiveActivity?
    /// The click target: FCM `webpush.fcm_options.link` and `data.url` (for the Android app),
    /// Web Push `navigate` (declarative) or `url` (classic), APNs a top-level `url` key.
    public var url: String?
    /// An image URL: FCM `notification.image`, Web Push `image` (classic format).
    public var image: String?
    /// FCM `fcm_options.analytics_label`.
    public var analyticsLabel: String?
    /// APNs `thread-id`.
    public var threadID: String?
    public var interruptionLevel: InterruptionLevel?
    /// APNs `relevance-score`, 0 to 1.
    public var relevanceScore: Double?
    /// WNS type; nil: toast (or the root element of `payload.wns`).
    public var wnsType: WNSKind?

    public init() {}
}
