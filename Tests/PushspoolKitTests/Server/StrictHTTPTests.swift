import Foundation
import Testing

/// `serve` reads HTTP strictly, checked with raw bytes over a socket: framing a proxy could read
/// another way is refused and the connection closed (nothing pipelined after it is served), ids
/// are decoded once and whole (never cut short at `%00` or `?`), invisible characters are not
/// ids, and each route has one spelling.
@Suite(.serialized) struct StrictHTTPTests {
    static let bearer = "Authorization: \(FrontDoorFiles.bearer)\r\n"
    static let device = #"{"platform": "fcm", "handle": "t1", "tags": ["u"]}"#

    /// A registration over the raw socket, each with a handle of its own (one handle is one device).
    static func put(_ target: String) -> String {
        let body = #"{"platform": "fcm", "handle": "h-\#(UUID().uuidString)", "tags": ["u"]}"#
        return "PUT \(target) HTTP/1.1\r\nHost: x\r\n\(bearer)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    static func error(_ a: RawHTTPClient.Answer) -> String? { (a.json as? [String: Any])?["error"] as? String }

    /// Sends `bytes`, then reads until the server closes: the one answer, and whether it closed.
    static func refused(_ f: SandboxFrontDoor, _ bytes: String) throws -> (text: String, closed: Bool) {
        let c = try RawHTTPClient(port: f.serve.port, timeout: 3)
        try c.send(bytes)
        return c.readToEnd()
    }

    @Test func ambiguousFramingIsRefusedAndTheConnectionClosed() throws {
        let f = try SandboxFrontDoor()
        let pipelined = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        let cases: [(String, String)] = [
            ("POST /v1/jobs HTTP/1.1\r\nHost: x\r\n\(Self.bearer)Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + pipelined,
             "Content-Length and Transfer-Encoding together are refused"),
            ("POST /v1/jobs HTTP/1.1\r\nHost: x\r\n\(Self.bearer)Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}x" + pipelined,
             "Content-Length: different values in one request"),
            ("GET /healthz HTTP/1.1\r\n\r\n" + pipelined, "Host: required"),
            ("GET /metrics HTTP/1.1\r\nHost: x\r\n\(Self.bearer)\(Self.bearer)\r\n" + pipelined, "Authorization: more than one"),
        ]
        for (bytes, why) in cases {
            let (text, closed) = try Self.refused(f, bytes)
            #expect(text.hasPrefix("HTTP/1.1 400 "), "\(text)")
            #expect(text.contains(#"{"error":"\#(why)"}"#), "\(text)")
            #expect(closed, "the connection stays open after: \(why)")
            // Exactly one answer: the request pipelined after it was not served.
            #expect(text.components(separatedBy: "HTTP/1.1 ").count == 2, "\(text)")
        }
        #expect(f.dir.list("spool/incoming").isEmpty)
    }

    @Test func aPercentEncodedNULOrQuestionMarkNeverShortensAnID() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        // nultest exists; deleting nultest%00zzz must not delete it.
        var a = try c.request("PUT", "/v1/devices/nultest", headers: [("Authorization", FrontDoorFiles.bearer)], body: Self.device)
        #expect(a.status == 200, "\(a.text)")
        try c.send("DELETE /v1/devices/nultest%00zzz HTTP/1.1\r\nHost: x\r\n\(Self.bearer)\r\n")
        a = try c.answer()
        #expect(a.status == 400 && Self.error(a) == "id: contains a control character", "\(a.text)")
        try c.send(Self.put("/v1/devices/abc%00def"))
        a = try c.answer()
        #expect(a.status == 400 && Self.error(a) == "id: contains a control character", "\(a.text)")
        // %3F is a "?" inside the id, not the start of a query: the id is "a?", never "a".
        try c.send(Self.put("/v1/devices/a%3F"))
        a = try c.answer()
        #expect(a.status == 200 && (a.json as? [String: Any])?["id"] as? String == "a?", "\(a.text)")
        // A broken escape or bytes that are not UTF-8 are refused, not guessed at.
        for target in ["/v1/devices/a%zz", "/v1/devices/a%", "/v1/devices/a%FF"] {
            try c.send(Self.put(target))
            a = try c.answer()
            #expect(a.status == 400 && Self.error(a) == "path: a segment is not percent-encoded UTF-8", "\(target): \(a.text)")
        }
        let listed = try f.cli(["devices"]).stdout
        #expect(listed.contains("nultest") && !listed.contains("abc") && listed.contains("a?"), "\(listed)")
        #expect(!listed.contains("\"a\""), "\(listed)")
    }

    @Test func invisibleCharactersAreNotIDs() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        let cases = [("alice%E2%80%8Bphone", "id: contains an invisible format character (U+200B)"),
                     ("%EF%BB%BFalicephone", "id: contains an invisible format character (U+FEFF)"),
                     ("alice%C2%A0phone", "id: contains a space other than U+0020 (U+00A0)")]
        for (id, why) in cases {
            try c.send(Self.put("/v1/devices/\(id)"))
            let a = try c.answer()
            #expect(a.status == 400 && Self.error(a) == why, "\(id): \(a.text)")
        }
        let a = try c.request("PUT", "/api/register/alice%E2%80%8Bphone", headers: [("Authorization", FrontDoorFiles.basic("alice"))],
                              body: #"{"Platform": "fcm", "Handle": "t1", "Tags": []}"#)
        #expect(a.status == 400 && Self.error(a) == "Id: contains an invisible format character (U+200B)", "\(a.text)")
    }

    @Test func eachRouteHasOneSpelling() throws {
        let f = try SandboxFrontDoor()
        let c = try f.serve.client()
        #expect(try c.request("GET", "/healthz").status == 200)
        for target in ["//healthz", "/healthz/", "/%68ealthz", "/healthz//", "/v1//jobs"] {
            try c.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\(Self.bearer)\r\n")
            let a = try c.answer()
            #expect(a.status == 404, "\(target): \(a.status) \(a.text)")
        }
    }
}
