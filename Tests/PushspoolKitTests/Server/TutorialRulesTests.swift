import Foundation
import Testing

/// The tutorial API's registration rules over HTTP: the tag limit and the index a refusal names,
/// and a handle moving between users (the tutorial's design), which a server can refuse.
@Suite(.serialized) struct TutorialRulesTests {
    static let handle = String(repeating: "d4", count: 32)

    static func auth(_ user: String) -> [(String, String)] { [("Authorization", FrontDoorFiles.basic(user))] }

    static func newID(_ c: RawHTTPClient, _ user: String) throws -> String {
        try #require(try c.request("POST", "/api/register?handle=\(handle)", headers: auth(user)).json as? String)
    }

    static func put(_ c: RawHTTPClient, _ user: String, _ id: String, tags: [String]) throws -> RawHTTPClient.Answer {
        let list = tags.map { "\"\($0)\"" }.joined(separator: ", ")
        return try c.request("PUT", "/api/register/\(id)", headers: auth(user),
                             body: #"{"Platform": "apns", "Handle": "\#(handle)", "Tags": [\#(list)]}"#)
    }

    static func error(_ a: RawHTTPClient.Answer) -> String { ((a.json as? [String: Any])?["error"] as? String) ?? a.text }

    @Test func tooManyTagsAreRefusedBeforeAnythingIsSavedAndABadTagNamesItsOwnIndex() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        let id = try Self.newID(c, "alice")
        // 60 of the app's own plus its username: tag is one more than the hub keeps.
        var a = try Self.put(c, "alice", id, tags: (0..<60).map { "follows_\($0)" })
        #expect(a.status == 400 && Self.error(a) == "Tags: at most 60 tags a device (what the notification hub keeps), got 61", "\(a.text)")
        #expect(!(try f.cli(["devices"]).stdout.contains(id)))
        a = try Self.put(c, "alice", id, tags: (0..<59).map { "follows_\($0)" })
        #expect(a.status == 200, "\(a.text)")
        // The first tag the app sent is Tags[0], whatever the server adds in front.
        a = try Self.put(c, "alice", id, tags: ["bad tag", "follows_ok"])
        #expect(a.status == 400 && Self.error(a).hasPrefix("Tags[0]: invalid tag \"bad tag\""), "\(a.text)")
        a = try Self.put(c, "alice", id, tags: ["follows_ok", "bad tag"])
        #expect(a.status == 400 && Self.error(a).hasPrefix("Tags[1]: invalid tag \"bad tag\""), "\(a.text)")
    }

    @Test("whoever holds a device's handle moves it to their user, as the tutorial does")
    func aHandleMovesBetweenUsersByDefault() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        let aliceID = try Self.newID(c, "alice")
        #expect(try Self.put(c, "alice", aliceID, tags: []).status == 200)
        // Bob's app registers the same push token: a fresh id, and the PUT moves the device to him.
        let bobID = try Self.newID(c, "bob")
        #expect(bobID != aliceID)
        let a = try Self.put(c, "bob", bobID, tags: [])
        #expect(a.status == 200, "\(a.text)")
        #expect(try f.cli(["devices", "--tags", "username:bob"]).stdout.contains(bobID))
        #expect(!(try f.cli(["devices", "--tags", "username:alice"]).stdout.contains(aliceID)))
    }

    @Test func aServerCanRefuseToMoveHandlesBetweenUsers() throws {
        let f = try SandboxFrontDoor(httpExtra: #", "handles_move_between_users": false"#)
        let c = try f.serve.client()
        let aliceID = try Self.newID(c, "alice")
        #expect(try Self.put(c, "alice", aliceID, tags: []).status == 200)
        let bobID = try Self.newID(c, "bob")
        let a = try Self.put(c, "bob", bobID, tags: [])
        #expect(a.status == 409 && Self.error(a).hasPrefix("Handle: registered to another user's device"), "\(a.text)")
        #expect(try f.cli(["devices", "--tags", "username:alice"]).stdout.contains(aliceID))
        // Her own re-registration still works.
        #expect(try Self.put(c, "alice", aliceID, tags: ["follows_x"]).status == 200)
    }
}

/// The failed-login throttle behind a reverse proxy: `X-Forwarded-For` names the client only
/// when the connection comes from `http.trusted_proxies`.
@Suite(.serialized) struct TrustedProxyTests {
    static func login(_ c: RawHTTPClient, password: String, forwardedFor: String) throws -> Int {
        try c.request("POST", "/api/register?handle=\(String(repeating: "e5", count: 32))",
                      headers: [("Authorization", FrontDoorFiles.basic("alice", password)), ("X-Forwarded-For", forwardedFor)]).status
    }

    @Test func behindATrustedProxyEachClientHasItsOwnThrottle() throws {
        let f = try SandboxFrontDoor(httpExtra: #", "trusted_proxies": ["127.0.0.1"]"#)
        let c = try f.serve.client()
        for i in 0..<10 { #expect(try Self.login(c, password: "guess-\(i)", forwardedFor: "6.6.6.6, 198.51.100.1") == 401) }
        #expect(try Self.login(c, password: "guess-x", forwardedFor: "198.51.100.1") == 429)
        // Another client behind the same proxy is not locked out by the first one's guesses.
        #expect(try Self.login(c, password: FrontDoorFiles.passwords["alice"]!, forwardedFor: "198.51.100.2") == 200)
    }

    @Test func fromAnyoneElseTheHeaderIsIgnored() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        for i in 0..<10 { #expect(try Self.login(c, password: "guess-\(i)", forwardedFor: "198.51.100.\(i)") == 401) }
        // The guesser cannot escape its throttle by naming other addresses.
        #expect(try Self.login(c, password: FrontDoorFiles.passwords["alice"]!, forwardedFor: "198.51.100.99") == 429)
    }
}
