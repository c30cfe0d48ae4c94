/// `providers.hms`: Huawei Push Kit, for Android phones without Google services.
public struct HMSConfig: Sendable {
    /// The app's id in AppGallery Connect: part of every send URL (`/v1/<app id>/messages:send`).
    public var appID: String
    /// The OAuth client (the app's id and secret, or a server API client's).
    public var clientID: String
    public var clientSecret: Secret
    /// The send API's base URL; nil: `defaultEndpoint`.
    public var endpoint: String?
    /// The OAuth token URL (the whole URL); nil: `defaultTokenEndpoint`.
    public var tokenEndpoint: String?

    public static let defaultEndpoint = "https://push-api.cloud.huawei.com"
    public static let defaultTokenEndpoint = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"

    public init(appID: String, clientID: String, clientSecret: Secret, endpoint: String? = nil, tokenEndpoint: String? = nil) {
        self.appID = appID
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.endpoint = endpoint
        self.tokenEndpoint = tokenEndpoint
    }
}
