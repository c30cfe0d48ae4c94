/// `providers.adm`: Amazon Device Messaging, for Fire tablets and Fire TV.
public struct ADMConfig: Sendable {
    /// The security profile's OAuth client.
    public var clientID: String
    public var clientSecret: Secret
    /// The send API's base URL; nil: `defaultEndpoint`.
    public var endpoint: String?
    /// The OAuth token URL (the whole URL); nil: `defaultTokenEndpoint`.
    public var tokenEndpoint: String?

    public static let defaultEndpoint = "https://api.amazon.com"
    public static let defaultTokenEndpoint = "https://api.amazon.com/auth/o2/token"

    public init(clientID: String, clientSecret: Secret, endpoint: String? = nil, tokenEndpoint: String? = nil) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.endpoint = endpoint
        self.tokenEndpoint = tokenEndpoint
    }
}
