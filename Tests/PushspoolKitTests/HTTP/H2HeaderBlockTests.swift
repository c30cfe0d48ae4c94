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

    /// nghttp2 keeps pointers into the block instead of copies (the block lives with its stream):
    /// every field says so, beside its indexing flag.
    @Test func fieldsAreNotCopiedByNghttp2() throws {
        var request = HTTPRequest(url: "https://api.example/3/device/ab", headers: [("apns-id", "1"), ("X-Upper", "v")],
                                  body: Array("{}".utf8), unindexedHeaders: [":path", "apns-id"])
        request.url = "https://api.example/3/device/ab"
        let (origin, pathStart) = try #require(Origin.parse(request.url))
        let block = H2HeaderBlock(request: request, authority: origin.authority, pathStart: pathStart)
        // nghttp2.h: NGHTTP2_NV_FLAG_NO_INDEX 0x01, NO_COPY_NAME 0x02, NO_COPY_VALUE 0x04.
        let noCopy: UInt8 = 0x02 | 0x04, noIndex: UInt8 = 0x01
        #expect((0..<block.count).map { block.flags($0) }
                == [noCopy, noCopy, noCopy, noCopy | noIndex, noCopy | noIndex, noCopy, noCopy])
    }

    /// Lowercasing eight bytes at a time: the letters' edges (`@`, `[`, `` ` ``, `{`), letters at
    /// every offset of a word and in the tail, and a name with a byte past ASCII (done byte by byte).
    @Test(arguments: [
        ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"),
        ("@[`{AZaz09-_:", "@[`{azaz09-_:"),
        ("x-Pushspool-TRACE-id-Z", "x-pushspool-trace-id-z"),
        ("ÀB-Cé-DEFGHIJ", "Àb-cé-defghij"),
        ("ABCDEFGH-É-XY", "abcdefgh-É-xy"),
        ("ABCDEFGHIJ", "abcdefghij"),
        ("ABCDEFG", "abcdefg"),
        ("abcdefgH" + String(repeating: "Q", count: 9), "abcdefgh" + String(repeating: "q", count: 9)),
        ("", ""),
    ])
    func lowercase(_ pair: (String, String)) {
        var bytes = Array(pair.0.utf8)
        bytes.withUnsafeMutableBufferPointer { H2HeaderBlock.lowercase($0) }
        #expect(String(decoding: bytes, as: UTF8.self) == pair.1)
    }

    /// The length written in place, digit by digit.
    @Test(arguments: [0, 9, 10, 99, 4096, 123_456])
    func contentLength(_ n: Int) {
        let got = fields(HTTPRequest(url: "https://x/", body: [UInt8](repeating: 0x7B, count: n)))
        #expect(got.last?.0 == "content-length" && got.last?.1 == String(n))
    }

    /// Every ASCII byte, filling a word and its tail: only `A`–`Z` change.
    @Test func lowercaseEveryASCIIByte() {
        for b in UInt8(0)...0x7F {
            var word = [UInt8](repeating: b, count: 19)
            word.withUnsafeMutableBufferPointer { H2HeaderBlock.lowercase($0) }
            #expect(word == [UInt8](repeating: b >= 0x41 && b <= 0x5A ? b | 0x20 : b, count: 19))
        }
    }
}
