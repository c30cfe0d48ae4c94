import Foundation
import Testing

/// The tutorial's hole, closed: a user sets only its own `username:` tag (and the configured
/// prefixes), touches only its own devices, and bob's messages reach only bob's devices. Then the
/// credentials: 401 with a challenge, throttling after repeated failures, per-user rate limits,
/// and no credential, password, token or handle in anything serve writes. Real binary, sandbox.
@Suite(.serialized) struct FrontDoorSecurityTests {
    static let aliceHandle = String(repeating: "a1", count: 32)
    static let bobHandle = String(repeating: "b2", count: 32)

    /// The tutorial's two steps: an id for the handle, then the PUT. Returns the id.
    static func register(_ c: RawHTTPClient, _ user: String, handle: String, platform: String = "apns", tags: [String] = []) throws -> String {
        let a = try c.request("POST", "/api/register?handle=\(handle)", headers: [("Authorization", FrontDoorFiles.basic(user))])
        #expect(a.status == 200, "\(a.text)")
        let id = try #require(a.json as? String)
        let body = #"{"Platform": "\#(platform)", "Handle": "\#(handle)", "Tags": [\#(tags.map { "\"\($0)\"" }.joined(separator: ", "))]}"#
        let put = try c.request("PUT", "/api/register/\(id)", headers: [("Authorization", FrontDoorFiles.basic(user)), ("Content-Type", "application/json")], body: body)
        #expect(put.status == 200, "\(put.text)")
        return id
    }

    static func put(_ c: RawHTTPClient, _ user: String, id: String, handle: String, tags: [String]) throws -> RawHTTPClient.Answer {
        let body = #"{"Platform": "apns", "Handle": "\#(handle)", "Tags": [\#(tags.map { "\"\($0)\"" }.joined(separator: ", "))]}"#
        return try c.request("PUT", "/api/register/\(id)", headers: [("Authorization", FrontDoorFiles.basic(user))], body: body)
    }

    @Test func aUserCannotTagOrTouchAnotherUsersDevices() throws {
        let f = try SandboxFrontDoor()
        let alice = try f.serve.client(), bob = try f.serve.client(), carol = try f.serve.client()
        let bobID = try Self.register(bob, "bob", handle: Self.bobHandle)
        let aliceID = try Self.register(alice, "alice", handle: Self.aliceHandle)

        // Tagging her device as bob's, to read his messages: refused, naming the tag.
        var a = try Self.put(alice, "alice", id: aliceID, handle: Self.aliceHandle, tags: ["username:bob"])
        #expect(a.status == 403 && (a.json as? [String: String])?["error"]?.hasPrefix("Tags[0]:") == true, "\(a.text)")
        // A tag outside client_tag_prefixes: refused too; one inside: taken.
        a = try Self.put(alice, "alice", id: aliceID, handle: Self.aliceHandle, tags: ["location_Boston"])
        #expect(a.status == 403)
        a = try Self.put(alice, "alice", id: aliceID, handle: Self.aliceHandle, tags: ["follows_RedSox"])
        #expect(a.status == 200, "\(a.text)")
        // Bob's device: neither deleted nor taken over by alice, and answered as an id that does
        // not exist would be (no 403 to tell her that it does).
        a = try alice.request("DELETE", "/api/register/\(bobID)", headers: [("Authorization", FrontDoorFiles.basic("alice"))])
        let unknown = try alice.request("DELETE", "/api/register/no-such-id", headers: [("Authorization", FrontDoorFiles.basic("alice"))])
        #expect(a.status == 404 && unknown.status == 404, "\(a.text)")
        #expect(a.text.replacingOccurrences(of: bobID, with: "X") == unknown.text.replacingOccurrences(of: "no-such-id", with: "X"))
        a = try Self.put(alice, "alice", id: bobID, handle: Self.aliceHandle, tags: [])
        #expect(a.status == 410, "\(a.text)")
        #expect(try f.cli(["devices", "--tags", "username:bob"]).stdout.contains(bobID))
        // An id handed out to bob is no use to alice; an id nobody handed out is gone.
        let reserved = try #require(try bob.request("POST", "/api/register?handle=\(String(repeating: "c3", count: 32))",
                                                    headers: [("Authorization", FrontDoorFiles.basic("bob"))]).json as? String)
        #expect(try Self.put(alice, "alice", id: reserved, handle: Self.aliceHandle, tags: []).status == 410)
        #expect(try Self.put(alice, "alice", id: "never-handed-out", handle: Self.aliceHandle, tags: []).status == 410)
        #expect(try alice.request("DELETE", "/api/register/nope", headers: [("Authorization", FrontDoorFiles.basic("alice"))]).status == 404)

        // Carol writes to bob: only bob's device gets it.
        a = try carol.request("POST", "/api/notifications?pns=apns&to_tag=bob",
                              headers: [("Authorization", FrontDoorFiles.basic("carol")), ("Content-Type", "application/json;charset=utf-8")],
                              body: #""secret plan""#)
        #expect(a.status == 200, "\(a.text)")
        let run = try f.cli(["run", "--once"])
        #expect(run.status == 0, "\(run.stderr)")
        let sent = f.outbox("apns")
        #expect(sent.count == 1)
        #expect(sent.first?["device"] as? String == bobID)
        #expect((sent.first?["payload"] as? [String: Any]).flatMap { ($0["aps"] as? [String: Any])?["alert"] as? String } == "From carol: secret plan")
        // Alice's device kept what she may set, and her name.
        let devices = try f.cli(["devices", "--tags", "username:alice"]).stdout
        #expect(devices.contains(#""tags":["follows_RedSox","username:alice"]"#), "\(devices)")
        // She may delete her own.
        #expect(try alice.request("DELETE", "/api/register/\(aliceID)", headers: [("Authorization", FrontDoorFiles.basic("alice"))]).status == 200)
        #expect(try Self.put(alice, "alice", id: aliceID, handle: Self.aliceHandle, tags: []).status == 410, "a removed id is gone")
    }

    @Test func missingOrWrongCredentialsAreRefusedThenThrottled() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        var a = try c.request("POST", "/api/register?handle=\(Self.aliceHandle)")
        #expect(a.status == 401)
        #expect(a.header("WWW-Authenticate")?.hasPrefix(#"Basic realm="pushspool""#) == true)
        #expect(a.header("Content-Type") == "application/json" && a.json != nil)
        a = try c.request("POST", "/api/register?handle=\(Self.aliceHandle)", headers: [("Authorization", FrontDoorFiles.basic("alice", "wrong-pw-1"))])
        #expect(a.status == 401 && !a.text.contains("wrong-pw-1"))
        // A service token is not a user login, nor a user login a service token.
        a = try c.request("POST", "/api/register?handle=\(Self.aliceHandle)", headers: [("Authorization", FrontDoorFiles.bearer)])
        #expect(a.status == 401)
        a = try c.request("GET", "/v1/devices?count=1", headers: [("Authorization", FrontDoorFiles.basic("alice"))])
        #expect(a.status == 401 && a.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        a = try c.request("GET", "/v1/devices?count=1", headers: [("Authorization", "Bearer not-the-token")])
        #expect(a.status == 401 && !a.text.contains("not-the-token"))
        // Failures from one address are capped: past them even the right password waits.
        var throttled: RawHTTPClient.Answer?
        for i in 0..<12 {
            let r = try c.request("POST", "/api/register?handle=\(Self.aliceHandle)", headers: [("Authorization", FrontDoorFiles.basic("bob", "guess-\(i)"))])
            if r.status == 429 { throttled = r; break }
            #expect(r.status == 401)
        }
        let t = try #require(throttled, "no 429 after 12 failed logins")
        #expect(Int(t.header("Retry-After") ?? "") ?? 0 > 0)
        #expect(try c.request("POST", "/api/register?handle=\(Self.aliceHandle)", headers: [("Authorization", FrontDoorFiles.basic("alice"))]).status == 429)
    }

    @Test func eachUserHasARateLimit() throws {
        let f = try SandboxFrontDoor(httpExtra: #", "rate_limit_per_minute": 5"#)
        let c = try f.serve.client()
        var statuses: [Int] = []
        for _ in 0..<7 {
            statuses.append(try c.request("POST", "/api/register?handle=\(Self.aliceHandle)", headers: [("Authorization", FrontDoorFiles.basic("alice"))]).status)
        }
        #expect(statuses == [200, 200, 200, 200, 200, 429, 429])
        let last = try c.request("POST", "/api/register?handle=\(Self.aliceHandle)", headers: [("Authorization", FrontDoorFiles.basic("alice"))])
        #expect(Int(last.header("Retry-After") ?? "") ?? 0 > 0)
        // Bob has his own minute.
        #expect(try c.request("POST", "/api/register?handle=\(Self.bobHandle)", headers: [("Authorization", FrontDoorFiles.basic("bob"))]).status == 200)
    }

    @Test func sendingCanBeLeftToServicesAndRetiredPlatformsAreRefused() throws {
        let f = try SandboxFrontDoor(httpExtra: #", "users_may_send": false"#)
        let c = try f.serve.client()
        let auth = [("Authorization", FrontDoorFiles.basic("bob"))]
        var a = try c.request("POST", "/api/notifications?pns=apns&to_tag=alice", headers: auth, body: #""hi""#)
        #expect(a.status == 403, "\(a.text)")
        a = try c.request("PUT", "/api/register/x", headers: auth, body: #"{"Platform": "mpns", "Handle": "https://db3.notify.live.net/x", "Tags": []}"#)
        #expect(a.status == 400 && a.text.contains("mpns"), "\(a.text)")
        #expect(f.dir.list("spool/incoming").isEmpty)
    }

    /// Everything serve writes — its log (the access log), /metrics, error bodies, job files and
    /// result logs — holds no password, Authorization header, token or device handle.
    @Test func noCredentialOrHandleInAnythingServeWrites() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        var bodies: [String] = []
        _ = try Self.register(c, "alice", handle: Self.aliceHandle)
        bodies.append(try c.request("POST", "/api/register?handle=\(Self.bobHandle)", headers: [("Authorization", FrontDoorFiles.basic("bob", "hunter3-typo"))]).text)
        bodies.append(try c.request("PUT", "/api/register/x", headers: [("Authorization", FrontDoorFiles.basic("alice"))],
                                    body: #"{"Platform": "apns", "Handle": "\#(Self.bobHandle)zz", "Tags": []}"#).text)
        bodies.append(try c.request("POST", "/api/notifications?pns=apns&to_tag=alice", headers: [("Authorization", FrontDoorFiles.basic("carol"))], body: #""hi""#).text)
        bodies.append(try c.request("GET", "/v1/devices", headers: [("Authorization", FrontDoorFiles.bearer)]).text)
        bodies.append(try c.request("GET", "/metrics", headers: [("Authorization", FrontDoorFiles.bearer)]).text)
        _ = try f.cli(["run", "--once"])
        var outputs = [("serve log", f.serve.log)] + bodies.enumerated().map { ("answer \($0.offset)", $0.element) }
        for folder in ["incoming", "done", "results", "failed"] {
            for name in f.dir.list("spool/\(folder)") { outputs.append(("\(folder)/\(name)", f.dir.read("spool/\(folder)/\(name)") ?? "")) }
        }
        #expect(f.serve.log.contains("POST /api/register"), "the access log has the requests")
        var secrets = Array(FrontDoorFiles.passwords.values) + ["hunter3-typo", FrontDoorFiles.token, Self.aliceHandle, Self.bobHandle]
        secrets += ["alice", "bob", "carol"].map { String(FrontDoorFiles.basic($0).dropFirst(6)) }
        for (name, text) in outputs {
            for secret in secrets { #expect(!text.contains(secret), "\(name) holds \(secret.prefix(6))…") }
        }
    }
}
