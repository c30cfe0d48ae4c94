import CCurl
import Foundation

/// One request in flight: its request, the bytes and headers received so far, its completion,
/// and while curl works on it, an easy handle. Created on the submitting thread, then owned by
/// the poll thread alone (hence `@unchecked`).
final class CurlTransfer: @unchecked Sendable {
    let request: HTTPRequest
    let completion: @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void
    var easy: CurlEasy?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    var body: [UInt8] = []
    var headers: [String: String] = [:]
    /// Times the poll loop re-sent this request after its connection died unanswered.
    var connectionRetries = 0

    init(request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        self.request = request
        self.completion = completion
    }

    deinit {
        if let headerList { curl_slist_free_all(headerList) }
    }

    /// Attaches `easy` and points it at this request; an error means the request cannot be sent.
    func attach(_ easy: CurlEasy) -> HTTPTransportError? {
        guard request.url.utf8.count > 8, request.url.prefix(8).lowercased() == "https://" else {
            return HTTPTransportError("only https URLs are allowed", isPermanent: true)
        }
        self.easy = easy
        body.removeAll(keepingCapacity: true)
        headers.removeAll(keepingCapacity: true)
        if let old = headerList { curl_slist_free_all(old) }
        var list: UnsafeMutablePointer<curl_slist>?
        var hasContentType = false, hasAccept = false, hasExpect = false
        for (name, value) in request.headers {
            switch name.lowercased() {
            case "content-type": hasContentType = true
            case "accept": hasAccept = true
            case "expect": hasExpect = true
            default: break
            }
            list = curl_slist_append(list, name + ": " + value)
        }
        // curl's defaults that no service asked for: a form content type on POST bodies, an
        // `Accept: */*`, and `Expect: 100-continue` (an extra round trip on HTTP/1.1).
        if !hasContentType { list = curl_slist_append(list, "Content-Type:") }
        if !hasAccept { list = curl_slist_append(list, "Accept:") }
        if !hasExpect { list = curl_slist_append(list, "Expect:") }
        headerList = list
        easy.prepare(for: self, headers: list)
        return nil
    }

    /// The outcome once the multi reported the transfer done (read before the handle is reused).
    func finish(code: CURLcode, requireHTTP2: Bool) -> Result<HTTPResponse, HTTPTransportError> {
        guard let easy else { return .failure(HTTPTransportError("no easy handle")) }
        var status = 0, version = 0
        _ = ccurl_easy_getinfo_long(easy.handle, CURLINFO_RESPONSE_CODE, &status)
        _ = ccurl_easy_getinfo_long(easy.handle, CURLINFO_HTTP_VERSION, &version)
        if code != CURLE_OK {
            return .failure(Self.transportError(code, detail: easy.errorText))
        }
        let isH2 = version == Int(CURL_HTTP_VERSION_2_0)
        if requireHTTP2 && !isH2 {
            return .failure(HTTPTransportError("server did not negotiate HTTP/2", isPermanent: true))
        }
        return .success(HTTPResponse(status: status, headers: headers, body: body, httpVersion: isH2 ? 2 : 1))
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
