/// Apple's `reason` strings (README: "How answers are handled"), typed. A reason Apple adds later is kept verbatim in
/// `.other` and classified by its HTTP status alone, so a new string never breaks a send.
public enum APNsReason: Sendable, Hashable, CustomStringConvertible {
    case badCollapseId, badDeviceToken, badExpirationDate, badMessageId, badPriority, badTopic
    case deviceTokenNotForTopic, duplicateHeaders, idleTimeout, invalidPushType, missingDeviceToken
    case missingTopic, payloadEmpty, topicDisallowed
    case badCertificate, badCertificateEnvironment, expiredProviderToken, forbidden
    case invalidProviderToken, missingProviderToken, unrelatedKeyIdInToken, badEnvironmentKeyIdInToken
    case badPath, methodNotAllowed, expiredToken, unregistered, payloadTooLarge
    case tooManyProviderTokenUpdates, tooManyRequests, internalServerError, serviceUnavailable, shutdown
    case other(String)

    /// The wire strings, in one place.
    static let wire: [(APNsReason, String)] = [
        (.badCollapseId, "BadCollapseId"), (.badDeviceToken, "BadDeviceToken"),
        (.badExpirationDate, "BadExpirationDate"), (.badMessageId, "BadMessageId"),
        (.badPriority, "BadPriority"), (.badTopic, "BadTopic"),
        (.deviceTokenNotForTopic, "DeviceTokenNotForTopic"), (.duplicateHeaders, "DuplicateHeaders"),
        (.idleTimeout, "IdleTimeout"), (.invalidPushType, "InvalidPushType"),
        (.missingDeviceToken, "MissingDeviceToken"), (.missingTopic, "MissingTopic"),
        (.payloadEmpty, "PayloadEmpty"), (.topicDisallowed, "TopicDisallowed"),
        (.badCertificate, "BadCertificate"), (.badCertificateEnvironment, "BadCertificateEnvironment"),
        (.expiredProviderToken, "ExpiredProviderToken"), (.forbidden, "Forbidden"),
        (.invalidProviderToken, "InvalidProviderToken"), (.missingProviderToken, "MissingProviderToken"),
        (.unrelatedKeyIdInToken, "UnrelatedKeyIdInToken"),
        (.badEnvironmentKeyIdInToken, "BadEnvironmentKeyIdInToken"),
        (.badPath, "BadPath"), (.methodNotAllowed, "MethodNotAllowed"),
        (.expiredToken, "ExpiredToken"), (.unregistered, "Unregistered"),
        (.payloadTooLarge, "PayloadTooLarge"),
        (.tooManyProviderTokenUpdates, "TooManyProviderTokenUpdates"), (.tooManyRequests, "TooManyRequests"),
        (.internalServerError, "InternalServerError"), (.serviceUnavailable, "ServiceUnavailable"),
        (.shutdown, "Shutdown"),
    ]
    private static let byString: [String: APNsReason] = Dictionary(uniqueKeysWithValues: wire.map { ($0.1, $0.0) })
    private static let byReason: [APNsReason: String] = Dictionary(uniqueKeysWithValues: wire.map { ($0.0, $0.1) })

    public init(_ raw: String) { self = Self.byString[raw] ?? .other(raw) }

    /// The string Apple sent.
    public var rawValue: String {
        if case .other(let s) = self { return s }
        return Self.byReason[self] ?? ""
    }

    public var description: String { rawValue }
}
