import Foundation
import Testing
@testable import PushspoolKit
@testable import PushspoolServer
import PushspoolCore

/// `config --check` of the `http` section's files.
@Suite struct FrontDoorChecksTests {
    typealias F = AuthFixtures

    func check(_ dir: TempDir, _ edit: (inout HTTPConfig) -> Void) -> [String] {
        var http = HTTPConfig()
        edit(&http)
        return FrontDoorChecks.problems(http, resolve: { dir.url.appendingPathComponent($0) })
    }

    @Test func goodFilesPass() {
        let dir = TempDir()
        dir.write("users", [F.alice, "# a comment", "", F.bob2b, F.carol6].joined(separator: "\n"))
        dir.write("tokens", ["# services", F.ciLine, "", "  \t", F.tokenLine("ops", "x")].joined(separator: "\n"))
        dir.write("cert.pem", try! String(contentsOf: Paths.fixture("server.pem"), encoding: .utf8), mode: 0o644)
        dir.write("key.pem", try! String(contentsOf: Paths.fixture("server-key.pem"), encoding: .utf8))
        #expect(check(dir) { $0.usersFile = "users"; $0.tokensFile = "tokens"; $0.tlsCertFile = "cert.pem"; $0.tlsKeyFile = "key.pem" } == [])
    }

    @Test("missing, unreadable and shared files: one line each, saying how to fix the mode")
    func fileProblems() {
        let dir = TempDir()
        dir.write("users", F.alice, mode: 0o604)
        dir.write("tokens", F.ciLine, mode: 0o000)
        let p = check(dir) { $0.usersFile = "users"; $0.tokensFile = "tokens"; $0.tlsCertFile = "nocert.pem"; $0.tlsKeyFile = "users" }
        let users = dir.path("users")
        #expect(p.contains("http.users_file: \(users) is readable by others (mode 604); fix: chmod o-r \(users)"))
        if getuid() != 0 {   // root reads a mode-000 file
            #expect(p.contains("http.tokens_file: \(dir.path("tokens")) cannot be read: Permission denied"))
        }
        #expect(p.contains { $0.hasPrefix("http.tls.cert_file: \(dir.path("nocert.pem")) cannot be read") })
        #expect(p.contains("http.tls.key_file: \(users) is readable by others (mode 604); fix: chmod o-r \(users)"))
        #expect(check(dir) { $0.usersFile = "absent" } == ["http.users_file: \(dir.path("absent")) does not exist"])
    }

    @Test("users file lines: every refused scheme, bad names and duplicates, by line and user, never the hash")
    func usersFileLines() {
        let dir = TempDir()
        dir.write("users", [F.alice, F.daveMD5, "noseparator", ":" + F.alice.dropFirst(6), "alice:" + F.bob2b.dropFirst(4),
                            "ok:$2y$04$tooShort", "sha:$5$salt$abc", "x:$6$salt$short"].joined(separator: "\n"))
        let path = dir.path("users")
        let p = check(dir) { $0.usersFile = "users" }
        #expect(p == [
            "http.users_file: \(path) line 2 (user \"dave\"): MD5 ($apr1$) hashes are refused; re-create the line with htpasswd -B",
            "http.users_file: \(path) line 3: not user:hash",
            "http.users_file: \(path) line 4: the user name is empty",
            "http.users_file: \(path) line 5 (user \"alice\"): listed again (first on line 1); both are refused",
            "http.users_file: \(path) line 6 (user \"ok\"): a malformed bcrypt hash (truncated?); re-create the line with htpasswd -B",
            "http.users_file: \(path) line 7 (user \"sha\"): SHA-256-crypt ($5$) hashes are refused; re-create the line with htpasswd -B",
            "http.users_file: \(path) line 8 (user \"x\"): a malformed SHA-512-crypt hash (truncated?); re-create the line with htpasswd -B",
        ])
        #expect(!p.joined().contains("UNVOrwkQ") && !p.joined().contains("i2YOP9kq") && !p.joined().contains("tooShort"))
    }

    @Test func tokensFileLines() {
        let dir = TempDir()
        let upper = "CI " + F.ciLine.dropFirst(3).uppercased()
        dir.write("tokens", [F.ciLine, upper, "ci2 c31f", "short", "a b c", F.tokenLine("ci", "other"),
                             "ci3 " + F.ciLine.dropFirst(3), "bad/name " + F.ciLine.dropFirst(3), "pasted tok-ci-0123456789"].joined(separator: "\n"))
        let path = dir.path("tokens")
        let hint = "(printf '%s' \"$TOKEN\" | sha256sum)"
        #expect(check(dir) { $0.tokensFile = "tokens" } == [
            "http.tokens_file: \(path) line 2 (CI): the digest must be 64 lowercase hex digits \(hint)",
            "http.tokens_file: \(path) line 3 (ci2): the digest must be 64 lowercase hex digits \(hint)",
            "http.tokens_file: \(path) line 4: not `<name> <sha256-hex of the token>` \(hint)",
            "http.tokens_file: \(path) line 5: not `<name> <sha256-hex of the token>` \(hint)",
            "http.tokens_file: \(path) line 6 (ci): the name is taken by line 1",
            "http.tokens_file: \(path) line 7 (ci3): the same token as line 1",
            "http.tokens_file: \(path) line 8: the name must be 1–120 characters of letters, digits and _ @ # . : -",
            "http.tokens_file: \(path) line 9 (pasted): the digest must be 64 lowercase hex digits \(hint)",
        ])
    }

    @Test("TLS: PEM that parses, a key that belongs to the certificate")
    func tls() {
        let dir = TempDir()
        dir.write("ca.pem", try! String(contentsOf: Paths.fixture("ca.pem"), encoding: .utf8))
        dir.write("key.pem", try! String(contentsOf: Paths.fixture("server-key.pem"), encoding: .utf8))
        dir.write("garbage.pem", "-----BEGIN CERTIFICATE-----\nnope\n")
        #expect(check(dir) { $0.tlsCertFile = "ca.pem"; $0.tlsKeyFile = "key.pem" }
                == ["http.tls.key_file: \(dir.path("key.pem")) is not the key of the certificate in \(dir.path("ca.pem"))"])
        #expect(check(dir) { $0.tlsCertFile = "garbage.pem"; $0.tlsKeyFile = "garbage.pem" } == [
            "http.tls.cert_file: \(dir.path("garbage.pem")) holds no PEM certificate",
            "http.tls.key_file: \(dir.path("garbage.pem")) holds no unencrypted PEM private key",
        ])
    }

    @Test("config --check lists the front door's problems with the rest and prints the http section")
    func configCheck() throws {
        let dir = TempDir()
        dir.write("users.htpasswd", [F.alice, F.daveMD5].joined(separator: "\n"))
        dir.write("tokens.txt", F.ciLine, mode: 0o644)
        dir.write("pushspool.json", #"{"http": {"listen": ":8080", "users_file": "users.htpasswd", "tokens_file": "tokens.txt"}}"#)
        let bad = try runPushspool(["config", "--check"], cwd: dir.url)
        #expect(bad.status == 78)
        #expect(bad.stderr.contains("line 2 (user \"dave\"): MD5 ($apr1$) hashes are refused"))
        #expect(bad.stderr.contains("fix: chmod o-r"))
        #expect(!bad.stderr.contains("i2YOP9kq"))
        chmod(dir.path("tokens.txt"), 0o600)
        dir.write("users.htpasswd", F.alice)
        let ok = try runPushspool(["config", "--check"], cwd: dir.url)
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("users.htpasswd\""))
        #expect(ok.stdout.contains("\"rate_limit_per_minute\": 600"))
        #expect(!ok.stdout.contains("UNVOrwkQ"))
    }
}
