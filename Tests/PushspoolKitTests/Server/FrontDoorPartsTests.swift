import Foundation
import Synchronization
import Testing
@testable import PushspoolKit
@testable import PushspoolServer
import PushspoolCore

/// The small parts of the strict front door, as tables: the client address behind trusted
/// proxies, path segments, the framing refusals, the password pool's bound.
@Suite struct FrontDoorPartsTests {
    static let proxies = ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32"].compactMap(AddressRange.init)

    @Test("X-Forwarded-For names the client only when a trusted proxy sent it", arguments: [
        // remote, header, client
        ("203.0.113.5", "198.51.100.9", "203.0.113.5"),           // not a proxy: the header is anyone's
        ("10.1.2.3", nil, "10.1.2.3"),                             // a proxy, no header: the proxy
        ("10.1.2.3", "198.51.100.9", "198.51.100.9"),              // one proxy
        ("10.1.2.3", "6.6.6.6, 198.51.100.9", "198.51.100.9"),     // the client's own claim (6.6.6.6) is ignored
        ("10.1.2.3", "198.51.100.9, 192.0.2.7", "198.51.100.9"),   // two proxies: both skipped
        ("10.1.2.3", "198.51.100.9,10.9.9.9", "198.51.100.9"),
        ("10.1.2.3", "10.9.9.9, 10.8.8.8", "10.9.9.9"),            // all proxies: the leftmost
        ("10.1.2.3", "198.51.100.9, garbage", "10.1.2.3"),         // a broken last entry: the proxy itself
        ("10.1.2.3", "garbage, 198.51.100.9", "198.51.100.9"),     // left of the client: never read
        ("10.1.2.3", " 198.51.100.9:4711 ", "198.51.100.9"),       // a port some proxies add
        ("10.1.2.3", "[2001:db9::1]:443", "2001:db9::1"),
        ("10.1.2.3", "2001:db9::1", "2001:db9::1"),
        ("::ffff:10.1.2.3", "198.51.100.9", "198.51.100.9"),       // the proxy on a dual-stack socket
        ("2001:db8::5", "198.51.100.9", "198.51.100.9"),
        ("10.1.2.3", "", "10.1.2.3"),
    ] as [(String, String?, String)])
    func forwardedFor(_ remote: String, _ header: String?, _ client: String) {
        #expect(ForwardedFor.client(remote: remote, header: header, trusted: Self.proxies) == client)
    }

    @Test func withoutTrustedProxiesTheHeaderIsIgnored() {
        #expect(ForwardedFor.client(remote: "10.1.2.3", header: "198.51.100.9", trusted: []) == "10.1.2.3")
    }

    @Test("path segments: as sent, one spelling", arguments: [
        ("/healthz", ["healthz"]), ("/v1/jobs/a%2Fb", ["v1", "jobs", "a%2Fb"]),
        ("//healthz", nil), ("/healthz/", nil), ("/", nil), ("healthz", nil), ("/a//b", nil), ("/a b", nil), ("/é", nil),
    ] as [(String, [String]?)])
    func segments(_ path: String, _ expected: [String]?) {
        #expect(RequestPath.segments(path)?.map(String.init) == expected)
    }

    @Test("segments decode once and whole", arguments: [
        ("plain", "plain"), ("a%3F", "a?"), ("nul%00zzz", "nul\u{0}zzz"), ("%2525", "%25"), ("caf%C3%A9", "café"),
        ("%e2%80%8b", "\u{200B}"),
    ])
    func decoded(_ raw: String, _ expected: String) {
        #expect(RequestPath.decoded(Substring(raw)) == expected)
    }

    @Test("malformed escapes and bytes that are not UTF-8 are refused", arguments: ["a%", "a%2", "a%zz", "%FF", "%C3", "%ED%A0%80"])
    func refusedSegments(_ raw: String) {
        #expect(RequestPath.decoded(Substring(raw)) == nil)
    }

    @Test func queryValuesDecodeLeniently() {
        #expect(RequestPath.decodedLeniently("a%20b%2Cc") == "a b,c")
        #expect(RequestPath.decodedLeniently("100%") == "100%")
        #expect(RequestPath.decodedLeniently("%zz") == "%zz")
    }

    @Test("framing", arguments: [
        ([("Host", "x")], nil),
        ([("Host", "x"), ("Content-Length", "5")], nil),
        ([("Host", "x"), ("Content-Length", "5"), ("content-length", "5")], nil),
        ([("Host", "x"), ("Content-Length", "5"), ("Content-Length", "6")], "Content-Length: different values in one request"),
        ([("Host", "x"), ("Content-Length", "5"), ("Transfer-Encoding", "chunked")], "Content-Length and Transfer-Encoding together are refused"),
        ([("Host", "x"), ("Content-Length", "5, 5")], "Content-Length: must be a number of bytes"),
        ([("Host", "x"), ("Content-Length", "+5")], "Content-Length: must be a number of bytes"),
        ([("Host", "x"), ("Transfer-Encoding", "chunked")], nil),
        ([], "Host: required"),
        ([("Host", "x"), ("host", "y")], "Host: more than one"),
        ([("Host", "x"), ("Authorization", "Basic a"), ("authorization", "Basic b")], "Authorization: more than one"),
    ] as [([(String, String)], String?)])
    func framing(_ headers: [(String, String)], _ problem: String?) {
        #expect(RequestFraming.problem(headers.map { (name: $0.0, value: $0.1) }) == problem)
    }

    @Test func thePasswordPoolRefusesPastItsBound() {
        let pool = VerificationPool(workers: 1, queueLimit: 2)
        let gate = DispatchSemaphore(value: 0)
        let ran = Atomic<Int>(0)
        let done = DispatchGroup()
        var accepted = 0
        for _ in 0..<5 {
            done.enter()
            if pool.submit({ gate.wait(); ran.add(1, ordering: .relaxed); done.leave() }) { accepted += 1 } else { done.leave() }
        }
        // One running, two waiting; the other two refused at once.
        #expect(accepted == 3)
        #expect(pool.load == 3)
        for _ in 0..<3 { gate.signal() }
        done.wait()
        #expect(ran.load(ordering: .relaxed) == 3)
        #expect(pool.submit({}) == true)
    }

    @Test func oneUserNameHoldsOneCheckSoOthersStillGetTheirTurn() {
        let pool = VerificationPool(workers: 1, queueLimit: 8)
        let gate = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        var guesses = 0
        for _ in 0..<5 {
            done.enter()
            if pool.submit(key: "alice", { gate.wait(); done.leave() }) { guesses += 1 } else { done.leave() }
        }
        // A flood at alice holds one check; bob's first login waits behind it, not refused.
        #expect(guesses == 1)
        done.enter()
        let bob = pool.submit(key: "bob", { done.leave() })
        #expect(bob)
        #expect(pool.load == 2)
        gate.signal()
        done.wait()
        // alice's check done: her share is free again.
        done.enter()
        let again = pool.submit(key: "alice", { done.leave() })
        #expect(again)
        done.wait()
    }

    @Test("a password is hashed on the pool, not the caller's thread; a full pool answers busy")
    func hashingLeavesTheCallersThread() throws {
        let h = AuthHarness(users: [AuthFixtures.alice])
        let pool = VerificationPool(workers: 1, queueLimit: 0)
        let auth = try Authenticator(config: h.http, resolve: { [dir = h.dir] in dir.url.appendingPathComponent($0) },
                                     now: { [clock = h.clock] in clock.now }, verifier: h.verifier, log: Log(handler: h.logs), pool: pool)
        let caller = pthread_self()
        let answered = DispatchSemaphore(value: 0)
        let first = Seen(), second = Seen(), third = Seen()
        let blocker = DispatchSemaphore(value: 0)
        auth.user(authorization: AuthFixtures.basic("alice", "s3cret-Alice"), remote: "10.0.0.1") { d in
            first.record(d, onCaller: pthread_equal(pthread_self(), caller) != 0)
            blocker.wait()
            answered.signal()
        }
        // The one worker is busy: the next check is refused at once.
        auth.user(authorization: AuthFixtures.basic("alice", "wrong"), remote: "10.0.0.2") { d in second.record(d, onCaller: true) }
        #expect(second.decision == .busy(retryAfter: 1))
        blocker.signal()
        answered.wait()
        #expect(first.decision == .allowed(.user("alice")) && first.onCaller == false)
        // Verified once: now from the cache, on the caller's thread, with no hashing.
        auth.user(authorization: AuthFixtures.basic("alice", "s3cret-Alice"), remote: "10.0.0.1") { d in
            third.record(d, onCaller: pthread_equal(pthread_self(), caller) != 0)
        }
        #expect(third.decision == .allowed(.user("alice")) && third.onCaller == true)
        #expect(h.verifier.count == 1)
    }

    @Test("requests carrying one credential while it is checked share the check; each wrong one counts for its own address")
    func aBurstOfOneCredentialCostsOneHash() throws {
        let h = AuthHarness(users: [AuthFixtures.alice])
        let auth = try Authenticator(config: h.http, resolve: { [dir = h.dir] in dir.url.appendingPathComponent($0) },
                                     now: { [clock = h.clock] in clock.now }, verifier: h.verifier, log: Log(handler: h.logs),
                                     pool: VerificationPool(workers: 1, queueLimit: 8))
        let gate = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        let decisions = Mutex<[AuthDecision]>([])
        // The one worker held by another user's check, so the burst arrives while nothing of it has run.
        done.enter()
        auth.user(authorization: AuthFixtures.basic("bob", "x"), remote: "10.0.0.9") { _ in gate.wait(); done.leave() }
        for i in 0..<20 {
            done.enter()
            auth.user(authorization: AuthFixtures.basic("alice", "s3cret-Alice"), remote: "10.0.1.\(i)") { d in
                decisions.withLock { $0.append(d) }
                done.leave()
            }
        }
        for _ in 0..<3 {
            done.enter()
            auth.user(authorization: AuthFixtures.basic("mallory", "guess"), remote: "10.0.2.1") { d in
                decisions.withLock { $0.append(d) }
                done.leave()
            }
        }
        gate.signal()
        done.wait()
        let all = decisions.withLock { $0 }
        #expect(all.filter { $0 == .allowed(.user("alice")) }.count == 20, "\(all)")
        #expect(all.filter { if case .unauthorized = $0 { true } else { false } }.count == 3, "\(all)")
        // bob's and mallory's decoys, alice's right password: three hashes for 24 requests. (A
        // guess at alice now would be refused busy: her one check is taken.)
        #expect(h.verifier.count == 3)
    }
}

/// What an asynchronous check answered, and on which thread.
private final class Seen: Sendable {
    private let state = Mutex<(AuthDecision?, Bool?)>((nil, nil))
    func record(_ d: AuthDecision, onCaller: Bool) { state.withLock { $0 = (d, onCaller) } }
    var decision: AuthDecision? { state.withLock { $0.0 } }
    var onCaller: Bool? { state.withLock { $0.1 } }
}
