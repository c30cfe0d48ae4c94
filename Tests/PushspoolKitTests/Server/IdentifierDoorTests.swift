import Foundation
import Testing

/// `serve`'s doors apply the one identifier rule: device ids on the service and tutorial routes,
/// job ids on `/v1/jobs`, refused with the field named; one NFC form; job ids one whatever their case.
@Suite(.serialized) struct IdentifierDoorTests {
    static let bearer = [("Authorization", FrontDoorFiles.bearer)]
    static let alice = [("Authorization", FrontDoorFiles.basic("alice"))]
    static let rlo = "x%E2%80%AEy"   // x U+202E y

    static func error(_ a: RawHTTPClient.Answer) -> String? { (a.json as? [String: Any])?["error"] as? String }

    @Test func brokenIDsAreRefusedNamingTheField() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        var a = try c.request("PUT", "/v1/devices/\(Self.rlo)", headers: Self.bearer, body: #"{"platform": "fcm", "handle": "t1", "tags": []}"#)
        #expect(a.status == 400 && Self.error(a) == "id: contains a bidirectional control character (U+202E)", "\(a.text)")
        a = try c.request("PUT", "/api/register/\(Self.rlo)", headers: Self.alice, body: #"{"Platform": "fcm", "Handle": "t1", "Tags": []}"#)
        #expect(a.status == 400 && Self.error(a) == "Id: contains a bidirectional control character (U+202E)", "\(a.text)")
        a = try c.request("DELETE", "/api/register/\(Self.rlo)", headers: Self.alice)
        #expect(a.status == 400 && Self.error(a) == "Id: contains a bidirectional control character (U+202E)", "\(a.text)")
        a = try c.request("GET", "/v1/jobs/\(Self.rlo)", headers: Self.bearer)
        #expect(a.status == 400 && Self.error(a) == #"id: must match [A-Za-z0-9._-]{1,128}, got "x\u{202E}y""#, "\(a.text)")
        // The answer's JSON carries it escaped, as JSON does.
        #expect(a.text.contains(#"\\u{202E}"#) && !a.text.contains("\u{202E}"), "\(a.text)")
    }

    @Test func oneDeviceInNFCAndOneJobWhateverItsCase() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        // café with a combining accent, then precomposed: one device.
        var a = try c.request("PUT", "/v1/devices/cafe%CC%81", headers: Self.bearer, body: #"{"platform": "fcm", "handle": "t1", "tags": ["u"]}"#)
        #expect(a.status == 200, "\(a.text)")
        a = try c.request("DELETE", "/v1/devices/caf%C3%A9", headers: Self.bearer)
        #expect(a.status == 200, "\(a.text)")
        // Spring-2 sent; spring-2 afterwards is that job, not a new one.
        _ = try f.cli(["register", "--platform", "fcm", "--handle", "tok-1", "--tag", "u", "--id", "d1"])
        a = try c.request("POST", "/v1/jobs", headers: Self.bearer, body: #"{"id": "Spring-2", "to_tag": "u", "pns": ["fcm"], "message": "m"}"#)
        #expect(a.status == 202, "\(a.text)")
        #expect(try f.cli(["run", "--once"]).status == 0)
        a = try c.request("POST", "/v1/jobs", headers: Self.bearer, body: #"{"id": "spring-2", "to_tag": "u", "pns": ["fcm"], "message": "m"}"#)
        #expect(a.status == 200 && (a.json as? [String: Any])?["state"] as? String == "done", "\(a.text)")
        #expect(f.dir.list("spool/incoming").isEmpty)
        a = try c.request("GET", "/v1/jobs/SPRING-2", headers: Self.bearer)
        #expect(a.status == 200 && (a.json as? [String: Any])?["state"] as? String == "done", "\(a.text)")
    }
}
