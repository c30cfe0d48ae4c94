import Foundation

/// One registered device, as stored in the registry.
public struct Device: Sendable, Hashable {
    /// Installation id: what result logs name (never the handle, which is a credential of sorts).
    public var id: String
    public var platform: Platform
    /// APNs device token (hex), FCM registration token or WNS channel URI.
    public var handle: String
    public var tags: [String]
    /// The user's language, for `localized` jobs; nil: the job's default text.
    public var lang: LanguageTag?
    public var updatedAt: Date
    /// The app it belongs to (§ Several apps): its topic, providers and rate cap.
    public var app: String
    /// APNs only: which host its token works on; nil on other platforms.
    public var environment: APNsEnvironment?
    /// APNs only: which of Apple's tokens the handle is (`device` on other platforms).
    public var tokenKind: APNsTokenKind
    /// The user's IANA time zone, for `local_time` jobs; nil: the app's `default_tz`, else UTC.
    public var tz: String?

    public init(id: String, platform: Platform, handle: String, tags: [String], lang: LanguageTag? = nil,
                updatedAt: Date, app: String = AppConfig.implicitID, environment: APNsEnvironment? = nil,
                tokenKind: APNsTokenKind = .device, tz: String? = nil) {
        self.tz = tz
        self.id = id
        self.platform = platform
        self.handle = handle
        self.tags = tags
        self.lang = lang
        self.updatedAt = updatedAt
        self.app = app
        self.environment = platform == .apns ? environment : nil
        self.tokenKind = platform == .apns ? tokenKind : .device
    }
}
