import Foundation
import Synchronization
@testable import PushspoolKit
@testable import PushspoolServer
import PushspoolTestSupport
import PushspoolCore

/// Fixed hashes made with apache2-utils (CI does not have it), cost 4 so the suite stays fast:
/// `htpasswd -nbB -C 4 alice 's3cret-Alice'`, `htpasswd -nb -5 carol 'c4rol pass'`, …
enum AuthFixtures {
    static let alice = "alice:$2y$04$UNVOrwkQ.wAoLtCsk0IvKeKJGL348G0VBhjHzDFyatT8ves5nKJmG"            // s3cret-Alice
    static let aliceNew = "alice:$2y$04$4EDamZYRnMfNZcDZj8N6vuDmVQ4Qt5Q8TpfPPYeeGztIVbv6.nDAW"         // new-Password
    /// bob's `$2y$` hash with the `$2b$` prefix: the same algorithm, as OpenBSD writes it.
    static let bob2b = "bob:$2b$04$xYnTpUVIh5tbx3zk9mkxZeJEOjx7MF99ri0/HjlKXv2lDw.ykZEqq"             // hunter2!
    static let carol6 = "carol:$6$KDdip2piCXzfGwdD$rHTItLtRL68vh4aM7HnhOisrfiQ8JBXYlMWfYoHMPDOzN7onTFBUc3v6R7PKCJ3H5UVtIiho0m1drIifRaF5d1" // c4rol pass
    static let daveMD5 = "dave:$apr1$i2YOP9kq$TpbpVOz8qcDEWVZYontCu."   // htpasswd -nbm
    static let erinSHA = "erin:{SHA}z0jT3TdveclVlHs5WCpg5cPeIe8="       // htpasswd -nbs
    static let frankDES = "frank://FqTlnQ0KF6U"                          // htpasswd -nbd
    static let ginaPlain = "gina:Pl41nPass"                              // htpasswd -nbp gina Pl41nPass
    /// `printf '%s' tok-ci-0123456789 | sha256sum`
    static let ciToken = "tok-ci-0123456789"
    static let ciLine = "ci c31f4add30d161aece69fdc9b6b0d29be70898d39696df6ebe9b3ff79363ea83"

    static func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    static func tokenLine(_ name: String, _ token: String) -> String {
        name + " " + SHA256.digest(Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

/// The real `crypt_r` check, counted: the cache must spare it.
final class CountingVerifier: PasswordVerifier {
    let calls = Atomic<Int>(0)
    private let real = CryptPasswordVerifier()
    func verify(password: [UInt8], against hash: String) -> Bool {
        calls.add(1, ordering: .relaxed)
        return real.verify(password: password, against: hash)
    }
    var count: Int { calls.load(ordering: .relaxed) }
}

/// An authenticator over users and tokens files in a fresh temporary folder.
struct AuthHarness {
    let dir = TempDir("pushspool-auth")
    let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
    let verifier = CountingVerifier()
    let logs = CollectingLogHandler()
    var http = HTTPConfig()

    init(users: [String]? = [AuthFixtures.alice], tokens: [String]? = [AuthFixtures.ciLine], ratePerMinute: Int = 600) {
        if let users {
            dir.write("users.htpasswd", users.joined(separator: "\n") + "\n")
            http.usersFile = "users.htpasswd"
        }
        if let tokens {
            dir.write("tokens.txt", tokens.joined(separator: "\n") + "\n")
            http.tokensFile = "tokens.txt"
        }
        http.rateLimitPerMinute = ratePerMinute
    }

    func make() throws(Authenticator.SetupError) -> Authenticator {
        try Authenticator(config: http, resolve: { [dir] in dir.url.appendingPathComponent($0) }, now: { [clock] in clock.now },
                          verifier: verifier, log: Log(handler: logs))
    }

    var logText: String { logs.events.map { $0.message + " " + $0.metadata.map { "\($0)=\($1)" }.joined(separator: " ") }.joined(separator: "\n") }
}
