import Foundation

/// Where a request goes: scheme is always https.
struct Origin: Hashable, Sendable {
    var host: String
    var port: Int
    /// `:authority` as sent: the host, and the port unless it is 443.
    var authority: String

    /// Splits an https URL into its origin and `:path` (path and query). Nil for anything else.
    static func split(_ url: String) -> (Origin, path: String)? {
        guard let (origin, pathStart) = parse(url) else { return nil }
        let path = url.utf8.count == pathStart ? "/" : String(url[url.utf8.index(url.utf8.startIndex, offsetBy: pathStart)...])
        return (origin, path)
    }

    /// The URL's origin and where its path starts (a byte offset; the URL's end when it has no
    /// path, which is then `/`). `known`: the origin the last request went to, returned as it is
    /// when the URL names it again, so a request costs no new host and authority strings.
    /// One pass over the bytes: this runs for every request.
    static func parse(_ url: String, known: Origin? = nil) -> (Origin, pathStart: Int)? {
        var url = url
        return url.withUTF8 { u -> (Origin, pathStart: Int)? in
            let scheme: StaticString = "https://"
            let n = scheme.utf8CodeUnitCount
            guard u.count > n, memcmp(u.baseAddress!, scheme.utf8Start, n) == 0 else { return nil }
            var slash = n
            var colon = -1
            var closeBracket = -1
            while slash < u.count, u[slash] != UInt8(ascii: "/") {
                switch u[slash] {
                case UInt8(ascii: ":"): colon = slash
                case UInt8(ascii: "]"): closeBracket = slash
                case UInt8(ascii: "@"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0...0x20: return nil
                default: break
                }
                slash += 1
            }
            guard slash > n else { return nil }
            if var k = known?.authority, k.utf8.count == slash - n,
               k.withUTF8({ memcmp($0.baseAddress!, u.baseAddress! + n, slash - n) == 0 }) {
                return (known!, slash)
            }
            let bracketed = u[n] == UInt8(ascii: "[")
            if bracketed && closeBracket < 0 { return nil }
            var hostRange = n..<slash
            var port = 443
            if colon > closeBracket {   // a port (after any IPv6 literal)
                var p = 0
                guard colon + 1 < slash, slash - colon <= 6 else { return nil }
                for i in (colon + 1)..<slash {
                    guard u[i] >= 0x30 && u[i] <= 0x39 else { return nil }
                    p = p * 10 + Int(u[i] - 0x30)
                }
                guard (1...65535).contains(p) else { return nil }
                port = p
                hostRange = n..<colon
            }
            if bracketed { hostRange = (n + 1)..<closeBracket }
            guard !hostRange.isEmpty else { return nil }
            let host = String(decoding: UnsafeBufferPointer(rebasing: u[hostRange]), as: UTF8.self)
            let authority = String(decoding: UnsafeBufferPointer(rebasing: u[n..<slash]), as: UTF8.self)
            return (Origin(host: host, port: port, authority: authority), slash)
        }
    }
}

/// One request on its way through the HTTP/2 client: the header block built once, the body, what
/// has come back so far. Belongs to the poll thread once queued.
final class H2Stream: @unchecked Sendable {
    let request: HTTPRequest
    let completion: @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void
    let origin: Origin
    /// Built once, sent on every attempt.
    let header: H2HeaderBlock
    let deadline: Double
    /// Times the server refused this request unprocessed (REFUSED_STREAM, past a GOAWAY).
    var refusals = 0

    // Per attempt.
    var bodySent = 0
    var status = 0
    var responseFields: [(name: String, value: String)] = []
    var body: [UInt8] = []
    var ended = false
    var timedOut = false

    /// The answer of a request whose deadline passed while it was in flight.
    var timeoutFailure: HTTPTransportError { HTTPTransportError("no response within \(Int(request.timeout)) s") }

    /// `pathStart`: where the path starts in the request's URL (`Origin.parse`).
    init(request: HTTPRequest, origin: Origin, pathStart: Int,
         completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        self.request = request
        self.completion = completion
        self.origin = origin
        deadline = monotonicNow() + request.timeout
        header = H2HeaderBlock(request: request, authority: origin.authority, pathStart: pathStart)
    }

    /// Forgets the previous attempt (the request goes again on another connection).
    func resetAttempt() {
        bodySent = 0
        status = 0
        responseFields.removeAll()
        body.removeAll()
        ended = false
    }

    var response: HTTPResponse {
        HTTPResponse(status: status, fields: responseFields, body: body, httpVersion: 2)
    }
}
