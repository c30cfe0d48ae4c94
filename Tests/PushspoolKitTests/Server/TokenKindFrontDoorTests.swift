import Foundation
import Testing

/// A registration's token kind through the front door: the tutorial API's optional `TokenKind`,
/// `PUT /v1/devices/{id}`'s `token_kind`, shown by `GET /v1/devices/{id}` and `pushspool devices`,
/// and each refusal naming its field. Against the real binary.
@Suite(.serialized) struct TokenKindFrontDoorTests {
    static let handle = String(repeating: "d4", count: 32)

    @Test("TokenKind and token_kind are stored and shown; an unknown kind or one on FCM is a 400 naming the field")
    func tokenKindsEnterThroughTheFrontDoor() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        let user = [("Authorization", FrontDoorFiles.basic("alice"))], service = [("Authorization", FrontDoorFiles.bearer)]
        let registered = try c.request("POST", "/api/register?handle=\(Self.handle)", headers: user)
        let id = try #require(registered.json as? String, "\(registered.text)")
        var a = try c.request("PUT", "/api/register/\(id)", headers: user,
                              body: #"{"Platform": "apns", "Handle": "\#(Self.handle)", "Tags": [], "TokenKind": "liveactivity"}"#)
        #expect(a.status == 200, "\(a.text)")
        a = try c.request("GET", "/v1/devices/\(id)", headers: service)
        #expect((a.json as? [String: Any])?["token_kind"] as? String == "liveactivity", "\(a.text)")
        #expect(try f.cli(["devices"]).stdout.contains(#""token_kind":"liveactivity""#))
        a = try c.request("PUT", "/api/register/\(id)", headers: user,
                          body: #"{"Platform": "apns", "Handle": "\#(Self.handle)", "Tags": [], "TokenKind": "phone"}"#)
        #expect(a.status == 400 && a.text.contains(#"TokenKind: unknown token kind \"phone\""#), "\(a.text)")

        a = try c.request("PUT", "/v1/devices/starter", headers: service,
                          body: #"{"platform": "apns", "handle": "\#(String(repeating: "e5", count: 32))", "tags": ["fans:a"], "token_kind": "pushtostart"}"#)
        #expect(a.status == 200 && (a.json as? [String: Any])?["token_kind"] as? String == "pushtostart", "\(a.text)")
        a = try c.request("GET", "/v1/devices/starter", headers: service)
        #expect((a.json as? [String: Any])?["token_kind"] as? String == "pushtostart", "\(a.text)")
        a = try c.request("PUT", "/v1/devices/droid", headers: service,
                          body: #"{"platform": "fcm", "handle": "tok-1", "tags": [], "token_kind": "voip"}"#)
        #expect(a.status == 400 && a.text.contains("token_kind: only APNs devices have a token kind (this one is fcm)"), "\(a.text)")
        // A device token shows no token_kind (the listing stays as it was).
        a = try c.request("PUT", "/v1/devices/phone", headers: service,
                          body: #"{"platform": "apns", "handle": "\#(String(repeating: "f6", count: 32))", "tags": []}"#)
        #expect(a.status == 200 && (a.json as? [String: Any])?["token_kind"] == nil, "\(a.text)")
    }

    @Test("register --token-kind: stored, named in the answer; a token kind on another platform is exit 65 naming --token-kind")
    func theCLITakesTokenKinds() throws {
        let f = try SandboxFrontDoor()
        var r = try f.cli(["register", "--platform", "apns", "--handle", Self.handle, "--token-kind", "voip", "--tag", "calls"])
        #expect(r.status == 0 && r.stdout.contains("voip token"), "\(r.stdout) \(r.stderr)")
        r = try f.cli(["register", "--platform", "wns", "--handle", "https://db5.notify.windows.com/?token=x", "--token-kind", "voip"])
        #expect(r.status == 65 && r.stderr.contains("--token-kind: only APNs devices have a token kind (this one is wns)"), "\(r.stderr)")
    }
}
