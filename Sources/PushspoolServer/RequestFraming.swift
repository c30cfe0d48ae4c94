/// What `serve` refuses in a request's head before anything else, beyond what libmicrohttpd
/// refuses itself: framing a proxy in front could read another way than this server (request
/// smuggling, RFC 9112 §6.3), and headers that must appear once.
///
/// A refused request is answered `400` and its connection closed: after a request whose end is
/// in doubt, nothing more on that connection can be trusted to be a request of its own.
enum RequestFraming {
    /// nil when the head may be served, else why not (one sentence naming the header).
    /// `headers`: every header line in order, names as sent, values as the library trimmed them.
    static func problem(_ headers: [(name: String, value: String)]) -> String? {
        var lengths: [String] = []
        var transferEncoding = false
        var hosts = 0, authorizations = 0
        for (name, value) in headers {
            switch name.lowercased() {
            case "content-length":
                // A list ("5, 5") is one of the forms RFC 9112 lets a server refuse; it is refused.
                lengths.append(value)
            case "transfer-encoding": transferEncoding = true
            case "host": hosts += 1
            case "authorization": authorizations += 1
            default: break
            }
        }
        if transferEncoding && !lengths.isEmpty { return "Content-Length and Transfer-Encoding together are refused" }
        if Set(lengths).count > 1 { return "Content-Length: different values in one request" }
        if let length = lengths.first, length.isEmpty || !length.utf8.allSatisfy({ (48...57).contains($0) }) {
            return "Content-Length: must be a number of bytes"
        }
        if hosts == 0 { return "Host: required" }
        if hosts > 1 { return "Host: more than one" }
        if authorizations > 1 { return "Authorization: more than one" }
        return nil
    }
}
