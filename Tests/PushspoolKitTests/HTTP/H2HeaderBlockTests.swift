import Testing
@testable import PushspoolHTTP

/// The header block a request goes out with: pseudo-headers first, the caller's names lowercased,
/// the fields HTTP/2 forbids dropped, `content-length` added where a body needs one, and only
/// the named fields sent unindexed.
@Suite struct H2HeaderBlockTests {
    /// Each field as (name, value, unindexed), read back through the array nghttp2 is given, for
    /// the request sent to `https://api.example:8443<path>`.
    func fields(_ request: HTTPRequest, path: String = "/3/device/ab") -> [(String, String, Bool)] {
        var request = request
        request.url = "https://api.example:8443" + path
        guard let (origin, pathStart) = Origin.parse(request.url) else { return [] }
        let block = H2HeaderBlock(request: request, authority: origin.authority, pathStart: pathStart)
        var got: [(String, String, Bool)] = []
        for i in 0..<block.count { got.append(block.field(i)) }
        return got
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var request: HTTPRequest
        var expected: [(String, String, Bool)]
        var testDescription: String { name }
    }

    static let pseudo: [(String, String, Bool)] = [(":method", "POST", false), (":scheme", "https", false),
                                                    (":authority", "api.example:8443", false), (":path", "/3/device/ab", false)]

    static let cases: [Case] = [
        Case(name: "a POST with a body gets its length",
             request: HTTPRequest(url: "https://x/", headers: [("apns-topic", "com.example")], body: Array("{}".utf8)),
             expected: pseudo + [("apns-topic", "com.example", false), ("content-length", "2", false)]),
        Case(name: "a POST without a body says 0",
             request: HTTPRequest(url: "https://x/"),
             expected: pseudo + [("content-length", "0", false)]),
        Case(name: "a GET without a body has no length",
             request: HTTPRequest(method: "GET", url: "https://x/"),
             expected: [(":method", "GET", false)] + pseudo.dropFirst()),
        Case(name: "names lowercased, forbidden ones dropped, the caller's length kept",
             request: HTTPRequest(url: "https://x/", headers: [("Authorization", "bearer t"), ("Connection", "close"), ("HOST", "x"),
                                                                ("keep-alive", "5"), ("Transfer-Encoding", "chunked"), ("upgrade", "h2c"),
                                                                ("Proxy-Connection", "x"), ("Content-Length", "7")],
                                  body: Array("payload".utf8)),
             expected: pseudo + [("authorization", "bearer t", false), ("content-length", "7", false)]),
        Case(name: "only the named fields are unindexed, the path among them",
             request: HTTPRequest(url: "https://x/", headers: [("apns-id", "1b4e28ba"), ("apns-topic", "t"), ("APNS-ID-X", "y")],
                                  unindexedHeaders: [":path", "apns-id"]),
             expected: [(":method", "POST", false), (":scheme", "https", false), (":authority", "api.example:8443", false),
                        (":path", "/3/device/ab", true), ("apns-id", "1b4e28ba", true), ("apns-topic", "t", false),
                        ("apns-id-x", "y", false), ("content-length", "0", false)]),
        Case(name: "an uppercase letter past the first eight bytes of a long name is lowercased too",
             request: HTTPRequest(url: "https://x/", headers: [("x-pushspool-Trace-ID", "A1"), ("apns-collapse-id", "Score"),
                                                                ("abcdefgH", "v"), ("ABCDEFGHIJKLMNOPQRSTUVWXYZ@[`{", "z")]),
             expected: pseudo + [("x-pushspool-trace-id", "A1", false), ("apns-collapse-id", "Score", false), ("abcdefgh", "v", false),
                                 ("abcdefghijklmnopqrstuvwxyz@[`{", "z", false), ("content-length", "0", false)]),
        Case(name: "non-ASCII values pass through as UTF-8",
             request: HTTPRequest(method: "PUT", url: "https://x/", headers: [("x-name", "Zoë")]),
             expected: [(":method", "PUT", false)] + pseudo.dropFirst() + [("x-name", "Zoë", false), ("content-length", "0", false)]),
    ]

    /// A URL without a path asks for `/`.
    @Test func noPathIsRoot() {
        #expect(fields(HTTPRequest(method: "GET", url: "https://x/"), path: "").map(\.1)[3] == "/")
        #expect(fields(HTTPRequest(method: "GET", url: "https://x/"), path: "/a?b=c").map(\.1)[3] == "/a?b=c")
    }

    /// The origin the last request went to is reused only when the URL names the same authority.
    @Test func knownOrigin() throws {
        let (first, start) = try #require(Origin.parse("https://api.example:8443/3/device/ab"))
        #expect(first.host == "api.example" && first.port == 8443 && start == 24)
        let (again, _) = try #require(Origin.parse("https://api.example:8443/x", known: first))
        #expect(again == first)
        let (other, _) = try #require(Origin.parse("https://api.example:8444/x", known: first))
        #expect(other.port == 8444 && other.authority == "api.example:8444")
        #expect(Origin.parse("https://api.example:8443@evil/x", known: first) == nil)
        #expect(Origin.split("https://[::1]:9/p?q")?.path == "/p?q")
        #expect(Origin.split("https://h")?.path == "/")
    }

    @Test(arguments: cases) func headerBlock(_ c: Case) {
        let got = fields(c.request)
        #expect(got.map(\.0) == c.expected.map(\.0))
        #expect(got.map(\.1) == c.expected.map(\.1))
        #expect(got.map(\.2) == c.expected.map(\.2))
    }
}
