/// A push platform a job can target. `gcm` is FCM's retired name and parses as `.fcm`.
public enum Platform: String, Sendable, Hashable, CaseIterable, Comparable {
    case apns, fcm, wns

    /// Parses a platform name as written in jobs, configs and CLI flags (`gcm` → `.fcm`).
    public init?(name: String) {
        if name == "gcm" { self = .fcm; return }
        self.init(rawValue: name)
    }

    public static func < (lhs: Platform, rhs: Platform) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// The names accepted by `init(name:)`, for error messages.
    public static let acceptedNames = "apns, fcm, gcm, wns"
}
