import Foundation

/// Where a request goes: scheme is always https.
struct Origin: Hashable, Sendable {
    var host: String
    var port: Int
    /// `:authority` as sent: the host, and the port unless it is 443.
    var authority: String

    /// Splits an https URL into its origin and `:path` (path and query). Nil for anything else.
    static func split(_ url: String) -> (Origin, path: String)? {
        let prefix = "https://"
        guard url.utf8.count > prefix.utf8.count, url.utf8.starts(with: prefix.utf8) else { return nil }
        let rest = url.utf8.dropFirst(prefix.utf8.count)
        let slash = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
        let authority = String(decoding: rest[..<slash], as: UTF8.self)
        let path = slash == rest.endIndex ? "/" : String(decoding: rest[slash...], as: UTF8.self)
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var host = authority
        var port = 443
        if authority.hasPrefix("[") {   // [v6]:port
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()), (1...65535).contains(p) else { return nil }
                port = p
            } else if !after.isEmpty { return nil }
        } else if let colon = authority.lastIndex(of: ":") {
            guard let p = Int(authority[authority.index(after: colon)...]), (1...65535).contains(p) else { return nil }
            host = String(authority[..<colon])
            port = p
        }
        guard !host.isEmpty else { return nil }
        return (Origin(host: host, port: port, authority: authority), path)
    }
}

/// One request on its way through the HTTP/2 client: the header block built once, the body, what
/// has come back so far. Belongs to the poll thread once queued.
final class H2Stream: @unchecked Sendable {
    let request: HTTPRequest
    let completion: @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void
    let origin: Origin
    /// Names and values of the header block back to back; `fields` indexes into it.
    let block: [UInt8]
    let fields: [(nameStart: Int, nameLength: Int, valueStart: Int, valueLength: Int)]
    let deadline: Double
    /// Times the server refused this request unprocessed (REFUSED_STREAM, past a GOAWAY).
    var refusals = 0

    // Per attempt.
    var bodySent = 0
    var status = 0
    var headers: [String: String] = [:]
    var body: [UInt8] = []
    var ended = false
    var timedOut = false

    init(request: HTTPRequest, origin: Origin, path: String,
         completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        self.request = request
        self.completion = completion
        self.origin = origin
        deadline = monotonicNow() + request.timeout
        var block: [UInt8] = []
        block.reserveCapacity(256 + request.body.count / 64)
        var fields: [(Int, Int, Int, Int)] = []
        fields.reserveCapacity(request.headers.count + 5)
        func add<N: Collection<UInt8>, V: Collection<UInt8>>(_ name: N, _ value: V, lowercase: Bool) {
            let n = block.count
            if lowercase {
                for b in name { block.append(b >= 0x41 && b <= 0x5A ? b | 0x20 : b) }
            } else {
                block.append(contentsOf: name)
            }
            let v = block.count
            block.append(contentsOf: value)
            fields.append((n, v - n, v, block.count - v))
        }
        add(":method".utf8, request.method.utf8, lowercase: false)
        add(":scheme".utf8, "https".utf8, lowercase: false)
        add(":authority".utf8, origin.authority.utf8, lowercase: false)
        add(":path".utf8, path.utf8, lowercase: false)
        var hasLength = false
        for (name, value) in request.headers {
            let lower = name.lowercased()
            // Connection-specific fields are forbidden in HTTP/2 (RFC 9113 §8.2.2).
            if lower == "connection" || lower == "keep-alive" || lower == "transfer-encoding" || lower == "upgrade" || lower == "host" { continue }
            if lower == "content-length" { hasLength = true }
            add(name.utf8, value.utf8, lowercase: true)
        }
        if !hasLength && (!request.body.isEmpty || request.method == "POST" || request.method == "PUT") {
            add("content-length".utf8, String(request.body.count).utf8, lowercase: false)
        }
        self.block = block
        self.fields = fields
    }

    /// Forgets the previous attempt (the request goes again on another connection).
    func resetAttempt() {
        bodySent = 0
        status = 0
        headers.removeAll()
        body.removeAll()
        ended = false
    }

    var response: HTTPResponse {
        HTTPResponse(status: status, headers: headers, body: body, httpVersion: 2)
    }
}
