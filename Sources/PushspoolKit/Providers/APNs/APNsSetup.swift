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
        if config.topic.trimmingCharacters(in: .whitespaces).isEmpty && config.topics.isEmpty {
            problems.append("\(section).topic: must be the app's bundle id, e.g. com.example.app")
        }
        if !["production", "sandbox"].contains(config.environment) {
            problems.append("\(section).environment: must be \"production\" or \"sandbox\", got \"\(config.environment)\"")
        }
        for (field, value) in [("endpoint", config.endpoint), ("production_endpoint", config.productionEndpoint),
                               ("sandbox_endpoint", config.sandboxEndpoint), ("channels_endpoint", config.channelsEndpoint),
                               ("sandbox_channels_endpoint", config.sandboxChannelsEndpoint)] {
            guard let endpoint = value else { continue }
            let url = URL(string: endpoint)
            if url?.scheme?.lowercased() != "https" || (url?.host ?? "").isEmpty {
                problems.append("\(section).\(field): must be an https URL, got \"\(endpoint)\"")
            }
        }

        let keyURL = context.config.resolve(config.keyFile)
        let (key, keyProblem, readable) = ProviderSetupChecks.ecKey(
            field: "\(section).key_file", path: config.keyFile, url: keyURL, format: "PKCS#8 PEM",
            missing: "the AuthKey_<KEYID>.p8 file from Apple", needs: "APNs needs the EC P-256 .p8 key")
        if let keyProblem { problems.append(keyProblem) }
        if readable { warnIfShared(keyURL, log: context.log) }

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
