import CCurl
import Foundation

/// One request in flight: its easy handle, the bytes and headers received so far, its completion.
/// Created on the submitting thread, then owned by the poll thread alone (hence `@unchecked`).
final class CurlTransfer: @unchecked Sendable {
    let request: HTTPRequest
    let completion: @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void
    var easy: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    var body: [UInt8] = []
    var headers: [String: String] = [:]

    init(request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        self.request = request
        self.completion = completion
        errorBuffer.initialize(to: 0)
    }

    deinit {
        if let easy { curl_easy_cleanup(easy) }
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }

    /// Builds the easy handle. `opaque` is this transfer, retained until the multi reports it done.
    func makeEasy(trust: TrustStore, options: HTTPClientOptions, opaque: UnsafeMutableRawPointer) -> HTTPTransportError? {
        guard let easy = curl_easy_init() else { return HTTPTransportError("curl_easy_init failed") }
        self.easy = easy
        guard request.url.lowercased().hasPrefix("https://") else {
            return HTTPTransportError("only https URLs are allowed", isPermanent: true)
        }
        _ = ccurl_easy_setopt_str(easy, CURLOPT_URL, request.url)
        _ = ccurl_easy_setopt_str(easy, CURLOPT_PROTOCOLS_STR, "https")
        // ALPN offers h2 and http/1.1: APNs gets h2, WNS may answer in 1.1.
        _ = ccurl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        // Wait for the one h2 connection instead of opening a second one per burst.
        _ = ccurl_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1)
        _ = ccurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1)
        _ = ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2)
        if let pem = trust.pem {
            _ = ccurl_easy_setopt_blob_nocopy(easy, CURLOPT_CAINFO_BLOB, pem.baseAddress, pem.count)
        }
        _ = ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, max(1, Int(request.timeout * 1000)))
        _ = ccurl_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = ccurl_easy_setopt_ptr(easy, CURLOPT_PRIVATE, opaque)
        _ = ccurl_easy_setopt_write_cb(easy, CURLOPT_WRITEFUNCTION, curlWriteBody)
        _ = ccurl_easy_setopt_ptr(easy, CURLOPT_WRITEDATA, opaque)
        _ = ccurl_easy_setopt_header_cb(easy, curlWriteHeader)
        _ = ccurl_easy_setopt_ptr(easy, CURLOPT_HEADERDATA, opaque)

        let method = request.method.uppercased()
        if method == "GET" {
            _ = ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1)
        } else {
            // COPYPOSTFIELDS copies the body, so the Swift array need not outlive this call.
            _ = ccurl_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count))
            _ = request.body.withUnsafeBytes { raw in
                // An empty body still needs a non-NULL pointer (NULL means "read from stdin").
                ccurl_easy_setopt_ptr(easy, CURLOPT_COPYPOSTFIELDS, raw.baseAddress ?? UnsafeRawPointer(errorBuffer))
            }
            if method != "POST" { _ = ccurl_easy_setopt_str(easy, CURLOPT_CUSTOMREQUEST, method) }
        }

        var list: UnsafeMutablePointer<curl_slist>?
        var names = Set<String>()
        for (name, value) in request.headers {
            names.insert(name.lowercased())
            list = curl_slist_append(list, "\(name): \(value)")
        }
        // curl's defaults that no service asked for: a form content type on POST bodies, an
        // `Accept: */*`, and `Expect: 100-continue` (an extra round trip on HTTP/1.1).
        if !names.contains("content-type") { list = curl_slist_append(list, "Content-Type:") }
        if !names.contains("accept") { list = curl_slist_append(list, "Accept:") }
        if !names.contains("expect") { list = curl_slist_append(list, "Expect:") }
        headerList = list
        _ = ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, list)
        return nil
    }

    /// The outcome once the multi reported the transfer done.
    func finish(code: CURLcode, requireHTTP2: Bool) -> Result<HTTPResponse, HTTPTransportError> {
        guard let easy else { return .failure(HTTPTransportError("no easy handle")) }
        var status = 0, version = 0
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        if code != CURLE_OK {
            return .failure(Self.transportError(code, detail: String(cString: errorBuffer)))
        }
        let isH2 = version == Int(CURL_HTTP_VERSION_2_0)
        if requireHTTP2 && !isH2 {
            return .failure(HTTPTransportError("server did not negotiate HTTP/2", isPermanent: true))
        }
        return .success(HTTPResponse(status: status, headers: headers, body: body, httpVersion: isH2 ? 2 : 1))
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

// C callbacks: no captures; the transfer travels as the opaque user pointer.

private let curlWriteBody: curl_write_callback = { ptr, size, count, user in
    let n = size * count
    guard let user, let ptr else { return n }
    let t = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    ptr.withMemoryRebound(to: UInt8.self, capacity: n) { t.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: n)) }
    return n
}

/// One header line per call, status line and the blank line included. Names are lowercased;
/// a new status line (1xx interim, redirects) starts a fresh set.
private let curlWriteHeader: curl_write_callback = { ptr, size, count, user in
    let n = size * count
    guard let user, let ptr else { return n }
    let t = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    let line = ptr.withMemoryRebound(to: UInt8.self, capacity: n) { UnsafeBufferPointer(start: $0, count: n) }
    if line.starts(with: Array("HTTP/".utf8)) {
        t.headers.removeAll(keepingCapacity: true)
        return n
    }
    guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return n }
    let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
    var value = line[(colon + 1)...]
    while let f = value.first, f == 0x20 || f == 0x09 { value = value.dropFirst() }
    while let l = value.last, l == 0x0A || l == 0x0D || l == 0x20 { value = value.dropLast() }
    t.headers[name] = String(decoding: value, as: UTF8.self)
    return n
}
