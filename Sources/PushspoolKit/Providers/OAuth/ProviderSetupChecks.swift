import Foundation

/// Start-up checks providers share; each returns problems as one line apiece.
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

    /// The EC P-256 private key in the PEM file a config `field` names (APNs' .p8 key, VAPID's
    /// key): the key, or the problem, one line naming the field. `readable` says whether the
    /// file could be read, for the caller's own check of its mode.
    static func ecKey(field: String, path: String, url: URL, format: String, missing: String, needs: String)
        -> (key: SigningKey?, problem: String?, readable: Bool) {
        guard !path.isEmpty else { return (nil, "\(field): missing (\(missing))", false) }
        guard let pem = try? String(contentsOf: url, encoding: .utf8) else {
            return (nil, "\(field): cannot read \(url.path): \(FileIO.whyUnreadable(url))", false)
        }
        do {
            let key = try SigningKey(pem: pem)
            guard key.kind == .ec else { return (nil, "\(field): \(url.path) is an RSA key; \(needs)", true) }
            return (key, nil, true)
        } catch {
            return (nil, "\(field): \(url.path) is not an EC P-256 private key (\(format)): \(error)", true)
        }
    }
}
