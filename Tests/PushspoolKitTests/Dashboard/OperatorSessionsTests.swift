import Foundation
import Testing
@testable import PushspoolServer
@testable import PushspoolKit
import PushspoolCore

/// The dashboard's sessions and operator accounts, without a server: idle expiry, logout,
/// the cookie's flags, the CSRF comparison, and `config --check` of `http.operators_file`.
@Suite struct OperatorSessionsTests {
    @Test func aSessionLastsTwelveIdleHoursAndEndsAtLogout() {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let sessions = OperatorSessions(now: { clock.now })
        let (cookie, session) = sessions.begin(user: "olivia")
        #expect(sessions.session(cookie: cookie)?.user == "olivia")
        #expect(sessions.session(cookie: cookie + "x") == nil)
        // Used within 12 h keeps it alive; 12 h without use ends it.
        clock.advance(11 * 3600)
        #expect(sessions.session(cookie: cookie) == session.withLastUsed(clock.now))
        clock.advance(11 * 3600)
        #expect(sessions.session(cookie: cookie) != nil)
        clock.advance(12 * 3600)
        #expect(sessions.session(cookie: cookie) == nil && sessions.count == 0)
        // Logout ends it at once, and only it.
        let (a, _) = sessions.begin(user: "olivia")
        let (b, _) = sessions.begin(user: "olivia")
        sessions.end(cookie: a)
        #expect(sessions.session(cookie: a) == nil && sessions.session(cookie: b) != nil)
    }

    @Test func cookieValuesAndTokensAreRandomAndCompared() {
        let sessions = OperatorSessions()
        let one = sessions.begin(user: "a"), two = sessions.begin(user: "a")
        #expect(one.cookie != two.cookie && one.session.csrf != two.session.csrf && one.cookie.count == 43)
        #expect(OperatorSessions.csrfMatches(one.session.csrf, one.session))
        #expect(!OperatorSessions.csrfMatches(two.session.csrf, one.session) && !OperatorSessions.csrfMatches(nil, one.session))
        #expect(OperatorSessions.cookie(in: "a=1; pushspool_session=abc; b=2") == "abc")
        #expect(OperatorSessions.cookie(in: "pushspool_session=") == nil && OperatorSessions.cookie(in: nil) == nil)
        #expect(OperatorSessions.setCookie("v", secure: false) == "pushspool_session=v; Path=/ui; HttpOnly; SameSite=Strict")
        #expect(OperatorSessions.setCookie("v", secure: true).hasSuffix("; Secure"))
    }

    @Test func configCheckRefusesAMissingOrEmptyOperatorsFile() {
        let dir = TempDir("pushspool-operators")
        var http = HTTPConfig()
        http.operatorsFile = "ops.htpasswd"
        let resolve = { (p: String) in dir.url.appendingPathComponent(p) }
        #expect(FrontDoorChecks.problems(http, resolve: resolve).contains { $0.hasPrefix("http.operators_file:") && $0.contains("does not exist") })
        dir.write("ops.htpasswd", "# nobody yet\n\n")
        #expect(FrontDoorChecks.problems(http, resolve: resolve).contains { $0.hasPrefix("http.operators_file:") && $0.contains("holds no account") })
        dir.write("ops.htpasswd", "ops:{SHA}z0jT3TdveclVlHs5WCpg5cPeIe8=\n")
        #expect(FrontDoorChecks.problems(http, resolve: resolve).contains { $0.contains("http.operators_file") && $0.contains("SHA-1") })
        dir.write("ops.htpasswd", FrontDoorFiles.operators)
        #expect(FrontDoorChecks.problems(http, resolve: resolve).isEmpty)
        dir.write("ops.htpasswd", FrontDoorFiles.operators, mode: 0o644)
        #expect(FrontDoorChecks.problems(http, resolve: resolve).contains { $0.contains("readable by others") })
    }

    @Test func operatorsLogInAgainstTheirOwnFileWithTheSameThrottle() throws {
        var h = AuthHarness(users: [AuthFixtures.alice])
        h.dir.write("ops.htpasswd", AuthFixtures.bob2b + "\n")
        h.http.operatorsFile = "ops.htpasswd"
        let auth = try h.make()
        func login(_ user: String, _ password: String, from remote: String = "10.0.0.1") -> AuthDecision {
            let box = DecisionBox()
            let done = DispatchSemaphore(value: 0)
            auth.operatorLogin(user: user, password: Array(password.utf8), remote: remote) { box.set($0); done.signal() }
            done.wait()
            return box.get()
        }
        #expect(login("bob", "hunter2!") == .allowed(.operator("bob")))
        // An app user is not an operator, and an operator is not an app user.
        #expect(login("alice", "s3cret-Alice") == .unauthorized(Authenticator.wrongCredentials))
        #expect(auth.user(authorization: AuthFixtures.basic("bob", "hunter2!"), remote: "10.0.0.2") == .unauthorized(Authenticator.wrongCredentials))
        // Guessing from one address is capped as for Basic, even with the right password after.
        for _ in 0..<10 { _ = login("bob", "wrong", from: "10.0.0.3") }
        guard case .throttled = login("bob", "hunter2!", from: "10.0.0.3") else { Issue.record("not throttled"); return }
        #expect(login("bob", "hunter2!", from: "10.0.0.4") == .allowed(.operator("bob")))
    }
}

private final class DecisionBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: AuthDecision = .unauthorized("unset")
    func set(_ d: AuthDecision) { lock.lock(); value = d; lock.unlock() }
    func get() -> AuthDecision { lock.lock(); defer { lock.unlock() }; return value }
}

extension OperatorSessions.Session {
    func withLastUsed(_ d: Date) -> Self {
        var s = self
        s.lastUsed = d.timeIntervalSince1970
        return s
    }
}
