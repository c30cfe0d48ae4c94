import CCurl
import Foundation

/// One request in flight: its request, the bytes and headers received so far, its completion,
/// and while curl works on it, an easy handle. Created on the submitting thread, then owned by
/// the poll thread alone until it finishes, then by the completion queue, which reads the body and
/// headers after the hand-over (hence `@unchecked`).
final class CurlTransfer: @unchecked Sendable {
    let request: HTTPRequest
    let completion: @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void
    var easy: CurlEasy?
    /// The request's header list, method and URL check, prepared once in `init` on the submitting
    /// thread: the poll thread drives every stream of the client alone and is the first thing to
    /// saturate, so per-request work that need not be there is not (and a resend reuses them).
    private let headerList: UnsafeMutablePointer<curl_slist>?
    let method: String
    private let isHTTPS: Bool
    var body: [UInt8] = []
    /// Header lines of the final response as received (CRLF-terminated), parsed off the poll thread.
    var rawHeaders: [UInt8] = []
    /// Times the poll loop re-sent this request after its connection died unanswered.
    var connectionRetries = 0
    /// The client's address check (set on the submitting thread), and why it refused the first
    /// address it refused (poll thread).
    var addressGuard: AddressGuard?
    var refusal: String?
    /// `HTTPClientOptions.plainHTTPToLoopback` (set on the submitting thread).
    var plainHTTPToLoopback = false

    init(request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        self.request = request
        self.completion = completion
        method = request.method.uppercased()
        isHTTPS = request.url.utf8.count > 8 && request.url.prefix(8).lowercased() == "https://"
        headerList = Self.headerList(for: request.fields)
    }

    deinit {
        headerList?.deallocate()
    }

    /// The request's headers as curl's list, plus blanks for curl's defaults that no service
    /// asked for: a form content type on POST bodies, an `Accept: */*`, and
    /// `Expect: 100-continue` (an extra round trip on HTTP/1.1).
    ///
    /// Built in one allocation (the nodes, then the NUL-terminated lines) instead of
    /// `curl_slist_append`'s two mallocs per line: curl only reads a `CURLOPT_HTTPHEADER` list,
    /// and this transfer frees it in `deinit` with one `deallocate` (never `curl_slist_free_all`).
    private static func headerList(for headers: [HTTPField]) -> UnsafeMutablePointer<curl_slist>? {
        var lines: [(name: String, value: String?)] = []
        lines.reserveCapacity(headers.count + 3)
        var hasContentType = false, hasAccept = false, hasExpect = false
        for field in headers {
            let (name, value) = (field.name, field.value)
            switch name.lowercased() {
            case "content-type": hasContentType = true
            case "accept": hasAccept = true
            case "expect": hasExpect = true
            default: break
            }
            lines.append((name, value))
        }
        if !hasContentType { lines.append(("Content-Type", nil)) }
        if !hasAccept { lines.append(("Accept", nil)) }
        if !hasExpect { lines.append(("Expect", nil)) }

        // "Name: value\0", or "Name:\0" for a blank that removes curl's default.
        let textBytes = lines.reduce(0) { $0 + $1.name.utf8.count + ($1.value.map { 2 + $0.utf8.count } ?? 1) + 1 }
        let nodeBytes = lines.count * MemoryLayout<curl_slist>.stride
        let block = UnsafeMutableRawPointer.allocate(byteCount: nodeBytes + textBytes,
                                                     alignment: MemoryLayout<curl_slist>.alignment)
        let nodes = block.bindMemory(to: curl_slist.self, capacity: lines.count)
        var text = (block + nodeBytes).bindMemory(to: CChar.self, capacity: textBytes)
        func put(_ bytes: some Sequence<UInt8>) {
            for b in bytes {
                text.initialize(to: CChar(bitPattern: b))
                text += 1
            }
        }
        for (i, line) in lines.enumerated() {
            (nodes + i).initialize(to: curl_slist(data: text, next: i + 1 < lines.count ? nodes + i + 1 : nil))
            put(line.name.utf8)
            if let value = line.value {
                put(": ".utf8)
                put(value.utf8)
            } else {
                put(":".utf8)
            }
            put(CollectionOfOne(0))
        }
        return nodes
    }

    /// The header lines exactly as curl reads them (for tests).
    var headerLines: [String] {
        var lines: [String] = []
        var node = headerList
        while let n = node {
            lines.append(String(cString: n.pointee.data))
            node = n.pointee.next
        }
        return lines
    }

    /// Attaches `easy` and points it at this request; an error means the request cannot be sent.
    func attach(_ easy: CurlEasy) -> HTTPTransportError? {
        let plain = !isHTTPS && plainHTTPToLoopback && Self.isPlainLoopback(request.url)
        guard isHTTPS || plain else {
            return HTTPTransportError("only https URLs are allowed", isPermanent: true)
        }
        self.easy = easy
        refusal = nil
        body.removeAll(keepingCapacity: true)
        rawHeaders.removeAll(keepingCapacity: true)
        easy.prepare(for: self, headers: headerList)
        // Handles are pooled: a client that may speak plain http sets the scheme on every request.
        if plainHTTPToLoopback { _ = ccurl_easy_setopt_str(easy.handle, CURLOPT_PROTOCOLS_STR, plain ? "http" : "https") }
        return nil
    }

    /// Whether `url` is `http://` to a loopback address written as such.
    static func isPlainLoopback(_ url: String) -> Bool {
        let lower = url.lowercased()
        guard lower.hasPrefix("http://") else { return false }
        let authority = lower.dropFirst(7).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if authority.contains("@") { return false }
        let host = authority.hasPrefix("[") ? String(authority.prefix { $0 != "]" }.dropFirst())
            : String(authority.prefix { $0 != ":" })
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// What the poll thread learns from a finished handle (read before the handle is reused):
    /// the status and HTTP version, or why there is no answer.
    struct Answer {
        var status: Int
        var httpVersion: Int
    }

    /// The outcome once the multi reported the transfer done (read before the handle is reused).
    func finish(code: CURLcode) -> Result<Answer, HTTPTransportError> {
        guard let easy else { return .failure(HTTPTransportError("no easy handle")) }
        var status = 0, version = 0
        _ = ccurl_easy_getinfo_long(easy.handle, CURLINFO_RESPONSE_CODE, &status)
        _ = ccurl_easy_getinfo_long(easy.handle, CURLINFO_HTTP_VERSION, &version)
        if code != CURLE_OK {
            // Every address refused: the same answer would come next time.
            if let refusal, code == CURLE_COULDNT_CONNECT { return .failure(HTTPTransportError(refusal, isPermanent: true)) }
            return .failure(Self.transportError(code, detail: easy.errorText))
        }
        return .success(Answer(status: status, httpVersion: version == Int(CURL_HTTP_VERSION_2_0) ? 2 : 1))
    }

    /// The response, built on the completion queue once the poll thread is done with this
    /// transfer. Header names are lowercased; the last value wins for repeated headers.
    func response(_ answer: Answer) -> HTTPResponse {
        HTTPResponse(status: answer.status, headers: Self.parseHeaders(rawHeaders), body: body,
                     httpVersion: answer.httpVersion)
    }

    static func parseHeaders(_ raw: [UInt8]) -> [String: String] {
        var headers: [String: String] = [:]
        raw.withUnsafeBufferPointer { all in
            var lineStart = 0
            while lineStart < all.count {
                var lineEnd = lineStart
                while lineEnd < all.count, all[lineEnd] != 0x0A { lineEnd += 1 }
                let line = UnsafeBufferPointer(rebasing: all[lineStart..<lineEnd])
                lineStart = lineEnd + 1
                guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
                let name = String(unsafeUninitializedCapacity: colon) { out in
                    for i in 0..<colon {
                        let c = line[i]
                        out[i] = c >= 0x41 && c <= 0x5A ? c | 0x20 : c
                    }
                    return colon
                }
                var start = colon + 1, end = line.count
                while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
                while end > start, line[end - 1] == 0x0D || line[end - 1] == 0x20 { end -= 1 }
                headers[name] = String(decoding: UnsafeBufferPointer(rebasing: line[start..<end]), as: UTF8.self)
            }
        }
        return headers
    }

    /// Why a connection to `address` is refused, nil when it may go ahead (or nothing is checked).
    func addressRefusal(_ address: UnsafePointer<sockaddr>) -> String? {
        guard let addressGuard, let host = Origin.split(request.url)?.0.host, !addressGuard.exempt(host) else { return nil }
        return addressGuard.refusal(host: host, address: address)
    }

    /// The connection failed under this request before any response status arrived.
    func isUnansweredConnectionLoss(_ code: CURLcode) -> Bool {
        guard let easy, [CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_HTTP2, CURLE_HTTP2_STREAM,
                         CURLE_GOT_NOTHING].contains(code) else { return false }
        var status = 0
        _ = ccurl_easy_getinfo_long(easy.handle, CURLINFO_RESPONSE_CODE, &status)
        return status == 0
    }

    /// curl's error as a transport error. Certificate and URL problems will not fix themselves.
    static func transportError(_ code: CURLcode, detail: String) -> HTTPTransportError {
        let permanent: Set<CURLcode> = [
            CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_PEER_FAILED_VERIFICATION,
            CURLE_SSL_CERTPROBLEM, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_ISSUER_ERROR,
        ]
        let text = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        return HTTPTransportError("curl error \(code.rawValue): \(text)", isPermanent: permanent.contains(code))
    }
}
