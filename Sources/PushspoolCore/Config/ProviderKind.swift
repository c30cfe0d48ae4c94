/// The providers a route may name, by their config names (`routes.<platform>`,
/// `providers.<name>`): the one list the parser, the redacted config and the provider factory use.
public enum ProviderKind: String, CaseIterable, Sendable {
    case apns, fcm, wns, webpush, azure, sandbox, hms, adm

    /// Whether it opens HTTP connections, and so takes `max_connections` (all but the sandbox).
    public var connects: Bool { self != .sandbox }

    /// The one platform a direct provider delivers to; nil for the hub (several platforms, not
    /// `web`) and the sandbox (every platform).
    public var directPlatform: Platform? {
        switch self {
        case .apns: .apns
        case .fcm: .fcm
        case .wns: .wns
        case .webpush: .web
        case .hms: .hms
        case .adm: .adm
        case .azure, .sandbox: nil
        }
    }

    /// Whether a route of `platform` to this provider can deliver at all.
    public func delivers(_ platform: Platform) -> Bool {
        switch self {
        case .sandbox: true
        // The hub's browser (Web Push) format is not implemented: web goes direct; Huawei and
        // Amazon devices have no hub format at all.
        case .azure: platform != .web && platform != .hms && platform != .adm
        default: directPlatform == platform
        }
    }
}
