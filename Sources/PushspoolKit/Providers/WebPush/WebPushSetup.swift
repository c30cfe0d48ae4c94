import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Start-up checks of `providers.webpush`, all at once (the CLI prints every problem and exits 78).
enum WebPushSetup {
    /// The VAPID key: an EC P-256 private key in PEM, readable, not readable by everyone.
    /// `subject`: `mailto:` or `https:` (RFC 8292 §2.1; push services refuse anything else).
    static func validate(_ config: WebPushConfig, context: ProviderContext) throws -> SigningKey {
        let section = "providers.webpush"
        var problems: [String] = []
        if let p = subjectProblem(config.subject) { problems.append("\(section).subject: \(p)") }
        problems += WebPushEndpointPolicy.configProblems(config.allowedHosts)
        let url = context.config.resolve(config.vapidPrivateKeyFile)
        let (key, keyProblem, readable) = ProviderSetupChecks.ecKey(
            field: "\(section).vapid_private_key_file", path: config.vapidPrivateKeyFile, url: url, format: "PEM",
            missing: "make one with `pushspool webpush keygen`", needs: "VAPID needs an EC P-256 key")
        if let keyProblem { problems.append(keyProblem) }
        var st = stat()
        if readable, stat(url.path, &st) == 0 {
            if st.st_mode & 0o007 != 0 {
                problems.append("\(section).vapid_private_key_file: \(url.path) is readable by every user (mode \(String(st.st_mode & 0o777, radix: 8))); chmod 600 it")
            } else if st.st_mode & 0o070 != 0 {
                context.log.warning("\(section).vapid_private_key_file: \(url.path) is readable by its group (mode \(String(st.st_mode & 0o777, radix: 8))); chmod 600 it")
            }
        }
        guard problems.isEmpty, let key else { throw ProviderSetupError(problems) }
        return key
    }

    static func subjectProblem(_ subject: String) -> String? {
        let lower = subject.lowercased()
        if lower.hasPrefix("mailto:"), subject.count > 7, subject.contains("@") { return nil }
        if lower.hasPrefix("https://"), subject.count > 8 { return nil }
        return "must be a mailto: address or an https: URL the push services can contact, e.g. \"mailto:ops@example.com\", got \"\(OAuthTokenEndpoint.clip(subject))\""
    }
}
