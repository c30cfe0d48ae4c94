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
        var key: SigningKey?
        let url = context.config.resolve(config.vapidPrivateKeyFile)
        if config.vapidPrivateKeyFile.isEmpty {
            problems.append("\(section).vapid_private_key_file: missing (make one with `pushspool webpush keygen`)")
        } else if let pem = try? String(contentsOf: url, encoding: .utf8) {
            do {
                let k = try SigningKey(pem: pem)
                if k.kind == .ec { key = k } else {
                    problems.append("\(section).vapid_private_key_file: \(url.path) is an RSA key; VAPID needs an EC P-256 key")
                }
            } catch {
                problems.append("\(section).vapid_private_key_file: \(url.path) is not an EC P-256 private key (PEM): \(error)")
            }
            var st = stat()
            if stat(url.path, &st) == 0 {
                if st.st_mode & 0o007 != 0 {
                    problems.append("\(section).vapid_private_key_file: \(url.path) is readable by every user (mode \(String(st.st_mode & 0o777, radix: 8))); chmod 600 it")
                } else if st.st_mode & 0o070 != 0 {
                    context.log.warning("\(section).vapid_private_key_file: \(url.path) is readable by its group (mode \(String(st.st_mode & 0o777, radix: 8))); chmod 600 it")
                }
            }
        } else {
            problems.append("\(section).vapid_private_key_file: cannot read \(url.path): \(FileIO.whyUnreadable(url))")
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
