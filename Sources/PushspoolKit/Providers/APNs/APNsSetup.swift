import Foundation
import PushspoolCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Start-up checks of `providers.apns`, all at once: the CLI prints every
/// problem and exits 78, instead of failing one notification at a time.
enum APNsSetup {
    struct Checked {
        var key: SigningKey
    }

    /// `tls.ca_file` is read and checked by the runtime, which adds it to every HTTP client.
    static func validate(_ config: APNsConfig, context: ProviderContext) throws -> Checked {
        var problems: [String] = []
        let section = "providers.apns"
        for (field, value) in [("team_id", config.teamID), ("key_id", config.keyID)]
        where value.count != 10 || !value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
            problems.append("\(section).\(field): must be Apple's 10-character id (letters and digits), got \"\(value)\"")
        }
        if config.topic.trimmingCharacters(in: .whitespaces).isEmpty {
            problems.append("\(section).topic: must be the app's bundle id, e.g. com.example.app")
        }
        if !["production", "sandbox"].contains(config.environment) {
            problems.append("\(section).environment: must be \"production\" or \"sandbox\", got \"\(config.environment)\"")
        }
        if let endpoint = config.endpoint {
            let url = URL(string: endpoint)
            if url?.scheme?.lowercased() != "https" || (url?.host ?? "").isEmpty {
                problems.append("\(section).endpoint: must be an https URL, got \"\(endpoint)\"")
            }
        }

        var key: SigningKey?
        let keyURL = context.config.resolve(config.keyFile)
        if config.keyFile.isEmpty {
            problems.append("\(section).key_file: missing (the AuthKey_<KEYID>.p8 file from Apple)")
        } else if let pem = try? String(contentsOf: keyURL, encoding: .utf8) {
            do {
                let k = try SigningKey(pem: pem)
                if k.kind == .ec { key = k } else {
                    problems.append("\(section).key_file: \(keyURL.path) is an RSA key; APNs needs the EC P-256 .p8 key")
                }
            } catch {
                problems.append("\(section).key_file: \(keyURL.path) is not an EC P-256 private key (PKCS#8 PEM): \(error)")
            }
            warnIfShared(keyURL, log: context.log)
        } else {
            problems.append("\(section).key_file: cannot read \(keyURL.path): \(FileIO.whyUnreadable(keyURL))")
        }

        guard problems.isEmpty, let key else { throw ProviderSetupError(problems) }
        return Checked(key: key)
    }

    /// The key signs for the whole team: say so when others on the machine can read it.
    static func warnIfShared(_ url: URL, log: Log) {
        var st = stat()
        guard stat(url.path, &st) == 0 else { return }
        if st.st_mode & 0o077 != 0 {
            log.warning("providers.apns.key_file: \(url.path) is readable by group or others (mode \(String(st.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
    }
}
