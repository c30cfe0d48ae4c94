import Foundation

/// Start-up checks both OAuth providers share; each returns problems as one line apiece.
enum ProviderSetupChecks {
    /// A problem line when `value` is not an absolute https URL with a host (credentials and
    /// bearer tokens are never sent in clear text).
    static func httpsURLProblem(_ value: String, field: String) -> String? {
        guard let c = URLComponents(string: value), c.scheme?.lowercased() == "https",
              let host = c.host, !host.isEmpty else {
            return "\(field): \"\(OAuthTokenEndpoint.clip(value))\" is not an https URL"
        }
        if c.user != nil || c.password != nil { return "\(field): URL must not contain user info" }
        return nil
    }
}
