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

    /// The extra trusted CA from `tls.ca_file`, read once at start-up.
    static func extraCA(_ config: Config, problems: inout [String]) -> String? {
        guard let file = config.tls.caFile else { return nil }
        let url = config.resolve(file)
        guard let pem = try? String(contentsOf: url, encoding: .utf8) else {
            problems.append("tls.ca_file: cannot read \(url.path)")
            return nil
        }
        guard pem.contains("-----BEGIN CERTIFICATE-----") else {
            problems.append("tls.ca_file: \(url.path) holds no PEM certificate")
            return nil
        }
        return pem
    }
}
