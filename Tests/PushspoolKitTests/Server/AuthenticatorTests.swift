import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import PushspoolKit
@testable import PushspoolServer
import PushspoolCore

@Suite struct AuthenticatorTests {
    typealias F = AuthFixtures

    @Test("bcrypt $2y$ and $2b$ and SHA-512-crypt $6$ verify through crypt_r")
    func acceptedSchemes() throws {
        let h = AuthHarness(users: [F.alice, F.bob2b, F.carol6])
        let auth = try h.make()
        #expect(auth.user(authorization: F.basic("alice", "s3cret-Alice"), remote: "10.0.0.1") == .allowed(.user("alice")))
        #expect(auth.user(authorization: F.basic("bob", "hunter2!"), remote: "10.0.0.1") == .allowed(.user("bob")))
        #expect(auth.user(authorization: F.basic("carol", "c4rol pass"), remote: "10.0.0.1") == .allowed(.user("carol")))
        #expect(auth.user(authorization: F.basic("carol", "c4rol pas"), remote: "10.0.0.1") == .unauthorized(Authenticator.wrongCredentials))
        #expect(auth.user(authorization: F.basic("alice", "s3cret-alice"), remote: "10.0.0.1") == .unauthorized(Authenticator.wrongCredentials))
        // An unknown user reads like a wrong password, and costs a crypt check too.
        let before = h.verifier.count
        #expect(auth.user(authorization: F.basic("mallory", "s3cret-Alice"), remote: "10.0.0.1") == .unauthorized(Authenticator.wrongCredentials))
        #expect(h.verifier.count == before + 1)
    }

    @Test func theRealVerifierComparesWhatCryptReturns() {
        let v = CryptPasswordVerifier()
        let hash = String(F.alice.dropFirst(6))
        #expect(v.verify(password: Array("s3cret-Alice".utf8), against: hash))
        #expect(!v.verify(password: Array("s3cret-Alice!".utf8), against: hash))
        #expect(!v.verify(password: Array("s3cret-Alice".utf8), against: "$2y$04$short"))
        #expect(!v.verify(password: [0x61, 0, 0x62], against: hash))
    }

    @Test("refused lines stop start-up, each naming its line and user, never its hash")
    func refusedSchemesAtStartUp() {
        let h = AuthHarness(users: [F.alice, F.daveMD5, F.erinSHA, F.frankDES, F.ginaPlain, "bad name:" + F.alice.dropFirst(6), F.alice])
        do {
            _ = try h.make()
            Issue.record("expected a SetupError")
        } catch {
            let path = h.dir.path("users.htpasswd")
            #expect(error.problems == [
                "http.users_file: \(path) line 2 (user \"dave\"): MD5 ($apr1$) hashes are refused; re-create the line with htpasswd -B",
                "http.users_file: \(path) line 3 (user \"erin\"): SHA-1 ({SHA}) hashes are refused; re-create the line with htpasswd -B",
                "http.users_file: \(path) line 4 (user \"frank\"): crypt DES hashes are refused; re-create the line with htpasswd -B",
                "http.users_file: \(path) line 5 (user \"gina\"): not a password hash (a plain-text password?); re-create the line with htpasswd -B",
                "http.users_file: \(path) line 6 (user \"bad name\"): the name cannot make the tag username:<user> (letters, digits and _ @ # . : - only, at most 111 characters)",
                "http.users_file: \(path) line 7 (user \"alice\"): listed again (first on line 1); both are refused",
            ])
            for hash in [F.alice, F.daveMD5, F.erinSHA, F.frankDES].map({ String($0.split(separator: ":", maxSplits: 1)[1]) }) + ["Pl41nPass"] {
                #expect(!error.description.contains(hash))
            }
        }
    }

    @Test func aFileOthersCanReadIsRefused() {
        let h = AuthHarness()
        chmod(h.dir.path("users.htpasswd"), 0o644)
        #expect(throws: Authenticator.SetupError.self) { try h.make() }
        do { _ = try h.make() } catch {
            #expect(error.problems == ["http.users_file: \(h.dir.path("users.htpasswd")) is readable by others (mode 644); fix: chmod o-r \(h.dir.path("users.htpasswd"))"])
        }
    }

    @Test("a verified password is cached: crypt runs once a minute per credential, never for a wrong password")
    func cache() throws {
        let h = AuthHarness(users: [F.alice])
        let auth = try h.make()
        let good = F.basic("alice", "s3cret-Alice")
        for _ in 0..<5 { #expect(auth.user(authorization: good, remote: "10.0.0.1") == .allowed(.user("alice"))) }
        #expect(h.verifier.count == 1)
        // A wrong password is checked for real each time, and never enters the cache.
        for _ in 0..<2 { #expect(auth.user(authorization: F.basic("alice", "guess"), remote: "10.0.0.2") == .unauthorized(Authenticator.wrongCredentials)) }
        #expect(h.verifier.count == 3)
        h.clock.advance(59)
        _ = auth.user(authorization: good, remote: "10.0.0.1")
        #expect(h.verifier.count == 3)
        h.clock.advance(1.5)
        #expect(auth.user(authorization: good, remote: "10.0.0.1") == .allowed(.user("alice")))
        #expect(h.verifier.count == 4)
    }

    @Test("a changed password misses the cache at once; a removed user is refused at once")
    func reloadedUsersFile() throws {
        let h = AuthHarness(users: [F.alice])
        let auth = try h.make()
        #expect(auth.user(authorization: F.basic("alice", "s3cret-Alice"), remote: "10.0.0.1") == .allowed(.user("alice")))
        #expect(auth.user(authorization: F.basic("bob", "hunter2!"), remote: "10.0.0.1") == .unauthorized(Authenticator.wrongCredentials))
        h.dir.write("users.htpasswd", [F.aliceNew, F.bob2b].joined(separator: "\n") + "\n")
        // Within the second the file is not looked at again.
        h.clock.advance(0.5)
        #expect(auth.user(authorization: F.basic("alice", "s3cret-Alice"), remote: "10.0.0.1") == .allowed(.user("alice")))
        h.clock.advance(0.6)
        #expect(auth.user(authorization: F.basic("alice", "s3cret-Alice"), remote: "10.0.0.1") == .unauthorized(Authenticator.wrongCredentials))
        #expect(auth.user(authorization: F.basic("alice", "new-Password"), remote: "10.0.0.1") == .allowed(.user("alice")))
        #expect(auth.user(authorization: F.basic("bob", "hunter2!"), remote: "10.0.0.1") == .allowed(.user("bob")))
        h.dir.write("users.htpasswd", F.bob2b + "\n")
        h.clock.advance(1)
        #expect(auth.user(authorization: F.basic("alice", "new-Password"), remote: "10.0.0.1") == .unauthorized(Authenticator.wrongCredentials))
    }

    @Test("a file that is rewritten badly keeps the last good copy; a file that is gone revokes everyone in it; each logged once")
    func unusableKeepsLastCopyGoneRevokes() throws {
        let h = AuthHarness(users: [F.alice])
        let auth = try h.make()
        let path = h.dir.path("users.htpasswd")
        // Rewritten readable by others: refused, so the copy read last stays in force.
        h.dir.write("users.htpasswd", F.bob2b + "\n", mode: 0o644)
        for _ in 0..<3 {
            h.clock.advance(1.1)
            #expect(auth.user(authorization: F.basic("alice", "s3cret-Alice"), remote: "10.0.0.1") == .allowed(.user("alice")))
        }
        #expect(h.logs.events.filter { $0.level == .warning }.count == 1)
        #expect(h.logText.contains("keeping the copy read last"))
        // Gone: nobody is in it any more.
        try FileManager.default.removeItem(atPath: path)
        for _ in 0..<3 {
            h.clock.advance(1.1)
            #expect(auth.user(authorization: F.basic("alice", "s3cret-Alice"), remote: "10.0.0.\(Int.random(in: 2...200))")
                    == .unauthorized(Authenticator.wrongCredentials))
        }
        #expect(h.logs.events.filter { $0.level == .warning }.count == 2)
        #expect(h.logText.contains("does not exist: everyone it named is refused until it is back"))
        // Back, with a refused line: the good lines apply and the bad one is logged, not its hash.
        h.dir.write("users.htpasswd", [F.bob2b, F.daveMD5].joined(separator: "\n"))
        h.clock.advance(1.1)
        #expect(auth.user(authorization: F.basic("bob", "hunter2!"), remote: "10.0.0.1") == .allowed(.user("bob")))
        #expect(h.logText.contains("line 2 (user \"dave\"): MD5 ($apr1$) hashes are refused"))
        #expect(!h.logText.contains("$apr1$i2YOP9kq"))
    }

    @Test("a deleted tokens file revokes every token at the next check")
    func deletedTokensFileRevokes() throws {
        let h = AuthHarness(users: [F.alice], tokens: [F.tokenLine("ci", "tok-1")])
        let auth = try h.make()
        #expect(auth.service(authorization: "Bearer tok-1", remote: "10.0.0.1") == .allowed(.service("ci")))
        try FileManager.default.removeItem(atPath: h.dir.path("tokens.txt"))
        h.clock.advance(1.1)
        #expect(auth.service(authorization: "Bearer tok-1", remote: "10.0.0.1") == .unauthorized(Authenticator.wrongToken))
    }

    @Test("10 failed checks within a minute throttle the address, even with the right password, until the window passes")
    func failedLoginThrottle() throws {
        let h = AuthHarness(users: [F.alice])
        let auth = try h.make()
        let good = F.basic("alice", "s3cret-Alice")
        for i in 0..<10 {
            #expect(auth.user(authorization: F.basic("alice", "guess\(i)"), remote: "192.0.2.7") == .unauthorized(Authenticator.wrongCredentials))
            h.clock.advance(1)
        }
        let calls = h.verifier.count
        #expect(auth.user(authorization: good, remote: "192.0.2.7") == .throttled(retryAfter: 50))
        #expect(auth.service(authorization: "Bearer " + F.ciToken, remote: "192.0.2.7") == .throttled(retryAfter: 50))
        #expect(h.verifier.count == calls)   // no crypt work for a throttled address
        #expect(auth.user(authorization: good, remote: "192.0.2.8") == .allowed(.user("alice")))
        h.clock.advance(49.5)
        #expect(auth.user(authorization: good, remote: "192.0.2.7") == .throttled(retryAfter: 1))
        h.clock.advance(0.5)
        #expect(auth.user(authorization: good, remote: "192.0.2.7") == .allowed(.user("alice")))
    }

    @Test("IPv6 clients count by /64; a missing header is not a failed guess")
    func throttleKeys() throws {
        let h = AuthHarness(users: [F.alice])
        let auth = try h.make()
        for i in 1...10 { _ = auth.service(authorization: "Bearer wrong\(i)", remote: "2001:db8:1:2::\(i)") }
        if case .throttled = auth.user(authorization: F.basic("alice", "s3cret-Alice"), remote: "[2001:db8:1:2:ffff::1]:4711") {} else {
            Issue.record("the /64 should be throttled")
        }
        #expect(auth.user(authorization: F.basic("alice", "s3cret-Alice"), remote: "2001:db8:1:3::1") == .allowed(.user("alice")))
        for _ in 0..<20 { #expect(auth.user(authorization: nil, remote: "10.9.9.9") == .unauthorized("credentials required (HTTP Basic)")) }
        #expect(auth.user(authorization: F.basic("alice", "s3cret-Alice"), remote: "10.9.9.9") == .allowed(.user("alice")))
        #expect(LoginFailureThrottle.key("::ffff:192.0.2.1") == "192.0.2.1")
        #expect(LoginFailureThrottle.key("192.0.2.1:8080") == "192.0.2.1")
        #expect(LoginFailureThrottle.key("2001:db8::1") == "20010db800000000::/64")
    }

    @Test func failedLoginMemoryIsBounded() {
        let t = LoginFailureThrottle(limit: 10, window: 60, capacity: 1000)
        for i in 0..<10 { t.recordFailure("198.51.100.1", now: 0) ; _ = i }
        for i in 0..<5000 { t.recordFailure("10.\(i / 65536).\(i / 256 % 256).\(i % 256)", now: 1) }
        #expect(t.count <= 1000)
        #expect(t.retryAfter("198.51.100.1", now: 2) == 58)   // the throttled address was kept
    }

    @Test("rate limit per principal: a minute's worth at once, then one slot every 60/N seconds")
    func rateLimit() throws {
        let h = AuthHarness(users: [F.alice, F.bob2b], tokens: [F.ciLine], ratePerMinute: 3)
        let auth = try h.make()
        let alice = F.basic("alice", "s3cret-Alice")
        for _ in 0..<3 { #expect(auth.user(authorization: alice, remote: "10.0.0.1") == .allowed(.user("alice"))) }
        #expect(auth.user(authorization: alice, remote: "10.0.0.2") == .throttled(retryAfter: 20))
        #expect(auth.user(authorization: F.basic("bob", "hunter2!"), remote: "10.0.0.1") == .allowed(.user("bob")))
        for _ in 0..<3 { #expect(auth.service(authorization: "Bearer " + F.ciToken, remote: "10.0.0.1") == .allowed(.service("ci"))) }
        #expect(auth.service(authorization: "Bearer " + F.ciToken, remote: "10.0.0.1") == .throttled(retryAfter: 20))
        h.clock.advance(15)
        #expect(auth.user(authorization: alice, remote: "10.0.0.1") == .throttled(retryAfter: 5))
        h.clock.advance(5)
        #expect(auth.user(authorization: alice, remote: "10.0.0.1") == .allowed(.user("alice")))
        #expect(auth.user(authorization: alice, remote: "10.0.0.1") == .throttled(retryAfter: 20))
        h.clock.advance(60)
        for _ in 0..<3 { #expect(auth.user(authorization: alice, remote: "10.0.0.1") == .allowed(.user("alice"))) }
    }

    @Test("bearer tokens: the digest of the token finds its name; anything else is refused")
    func tokens() throws {
        let h = AuthHarness(users: nil, tokens: [F.ciLine, "# ops", "", F.tokenLine("ops", "ops-token-xyz")])
        let auth = try h.make()
        #expect(auth.service(authorization: "Bearer " + F.ciToken, remote: "10.0.0.1") == .allowed(.service("ci")))
        #expect(auth.service(authorization: "bearer   ops-token-xyz", remote: "10.0.0.1") == .allowed(.service("ops")))
        #expect(auth.service(authorization: "Bearer ops-token-xy", remote: "10.0.0.1") == .unauthorized(Authenticator.wrongToken))
        // The digest itself is not a token.
        #expect(auth.service(authorization: "Bearer c31f4add30d161aece69fdc9b6b0d29be70898d39696df6ebe9b3ff79363ea83", remote: "10.0.0.1")
                == .unauthorized(Authenticator.wrongToken))
        #expect(auth.service(authorization: F.basic("ci", F.ciToken), remote: "10.0.0.1") == .unauthorized("the Authorization header must be a Bearer token"))
        #expect(auth.service(authorization: nil, remote: "10.0.0.1") == .unauthorized("credentials required (Authorization: Bearer)"))
        #expect(auth.user(authorization: F.basic("alice", "s3cret-Alice"), remote: "10.0.0.3") == .unauthorized("no users are configured (http.users_file)"))
        let tokens = BearerTokens(parsing: Array([F.ciLine, F.tokenLine("a", "1"), F.tokenLine("b", "2")].joined(separator: "\n").utf8))
        #expect(tokens.name(of: Array("1".utf8)) == "a")
        #expect(tokens.name(of: Array("2".utf8)) == "b")
        #expect(tokens.name(of: Array("3".utf8)) == nil)
    }

    @Test("a new token works without a restart")
    func tokensReload() throws {
        let h = AuthHarness(users: nil, tokens: [F.ciLine])
        let auth = try h.make()
        #expect(auth.service(authorization: "Bearer fresh", remote: "10.0.0.1") == .unauthorized(Authenticator.wrongToken))
        h.dir.write("tokens.txt", [F.ciLine, F.tokenLine("fresh", "fresh")].joined(separator: "\n"))
        h.clock.advance(1)
        #expect(auth.service(authorization: "Bearer fresh", remote: "10.0.0.1") == .allowed(.service("fresh")))
    }

    @Test("no reason and no log line repeats a credential")
    func noCredentialInReasons() throws {
        let h = AuthHarness(users: [F.alice])
        let auth = try h.make()
        let secrets = ["s3cret-Alice", "Zm9v0pen", "tok-ci-0123456789", "hunter2", "c2VjcmV0"]
        let headers: [String?] = [
            F.basic("alice", "Zm9v0pen"), F.basic("nobody", "hunter2"), "Basic c2VjcmV0", "Basic !!!s3cret-Alice",
            "Digest s3cret-Alice", "Basic", "Basic a b", F.basic("alice", "s3cret-Alice") + "x", "Bearer tok-ci-0123456789",
        ]
        var reasons: [String] = []
        for header in headers {
            for decision in [auth.user(authorization: header, remote: "10.0.0.1"), auth.service(authorization: header, remote: "10.0.0.2")] {
                if case .unauthorized(let reason) = decision { reasons.append(reason) }
            }
        }
        #expect(reasons.count >= 12)
        for reason in reasons {
            for secret in secrets { #expect(!reason.contains(secret), "\(reason)") }
        }
        for secret in secrets { #expect(!h.logText.contains(secret)) }
    }

    @Test func basicHeaderParsing() {
        guard case .ok(let c) = AuthorizationHeader.basic("basic  " + Data("a:b:c".utf8).base64EncodedString()) else {
            Issue.record("expected credentials")
            return
        }
        #expect(c.user == "a" && c.password == Array("b:c".utf8))
        if case .ok = AuthorizationHeader.basic("Basic " + Data(":pw".utf8).base64EncodedString()) { Issue.record("an empty user") }
        if case .ok = AuthorizationHeader.basic("Basic " + Data("nocolon".utf8).base64EncodedString()) { Issue.record("no colon") }
        if case .ok = AuthorizationHeader.basic("Basic " + String(repeating: "A", count: 5000)) { Issue.record("too long") }
        if case .missing = AuthorizationHeader.basic("") {} else { Issue.record("empty is missing") }
    }
}

@Suite struct AuthenticatorConcurrencyTests {
    @Test("many threads at once: each crypt_r call has its own scratch buffer, results stay right")
    func concurrentChecks() throws {
        let h = AuthHarness(users: [AuthFixtures.alice, AuthFixtures.bob2b, AuthFixtures.carol6])
        let auth = try h.make()
        let logins = [("alice", "s3cret-Alice"), ("bob", "hunter2!"), ("carol", "c4rol pass")]
        let wrong = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 48) { i in
            let (user, password) = logins[i % 3]
            // Distinct wrong passwords miss the cache, so crypt_r runs concurrently for real.
            let good = auth.user(authorization: AuthFixtures.basic(user, password), remote: "10.1.0.\(i)")
            let bad = auth.user(authorization: AuthFixtures.basic(user, password + "\(i)"), remote: "10.2.0.\(i)")
            if good != .allowed(.user(user)) || bad != .unauthorized(Authenticator.wrongCredentials) { wrong.add(1, ordering: .relaxed) }
        }
        #expect(wrong.load(ordering: .relaxed) == 0)
        #expect(h.verifier.count >= 48 + 3)
    }
}
