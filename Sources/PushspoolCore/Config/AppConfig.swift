/// One app of the organisation (`apps.<id>`): which provider each of its platforms goes to, its
/// APNs topic (bundle id) and, when set, its own request rate cap. A config without `apps` is one
/// app, `default`, with the top-level `routes` and the APNs provider's `topic`.
public struct AppConfig: Sendable, Equatable {
    /// Platform → provider name (a key of `providers`, or `sandbox`).
    public var routes: [Platform: String]
    /// `apns_topic`: the bundle id its APNs notifications carry; nil: the provider's `topic`.
    public var apnsTopic: String?
    /// `max_per_second`: this app's requests a second across its providers; nil: no cap of its own.
    public var maxPerSecond: Double?
    /// `frequency_cap`: how many capped jobs may reach one of its devices in a window; nil: no cap.
    public var frequencyCap: FrequencyCap?
    /// `default_tz`: the IANA zone of its devices that registered none (`local_time` jobs); nil: UTC.
    public var defaultTZ: String?
    /// `quiet_hours`: its devices' pushes wait for the end of them (a job's own replace them).
    public var quietHours: QuietHours?
    /// `track`: every job of this app is tracked (its pushes carry notification ids).
    public var track = false

    /// The zone a device of this app lives in: its own `tz`, else the app's `default_tz`, else UTC.
    public func zone(of deviceTZ: String?) -> String { deviceTZ ?? defaultTZ ?? "UTC" }

    public init(routes: [Platform: String], apnsTopic: String? = nil, maxPerSecond: Double? = nil, frequencyCap: FrequencyCap? = nil) {
        self.routes = routes
        self.apnsTopic = apnsTopic
        self.maxPerSecond = maxPerSecond
        self.frequencyCap = frequencyCap
    }

    /// The app id of a config without `apps`.
    public static let implicitID = "default"

    /// Why `id` cannot be an app id (the identifier rule, within `[A-Za-z0-9._-]`), or nil.
    public static func idProblem(_ id: String) -> String? {
        Identifier.jobIDProblem(id).map { "app id \($0)" }
    }
}

/// The APNs environment of a device: which host its token works on. `sandbox` is accepted as
/// the name of `development` (Apple calls the host the sandbox).
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable {
    case production, development

    public init?(name: String) {
        switch name {
        case "production": self = .production
        case "development", "sandbox": self = .development
        default: return nil
        }
    }

    public static let acceptedNames = "production, development (or sandbox)"
}
