import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 client that writes exactly the bytes it is given on one keep-alive TCP connection,
/// so tests can replay an app's requests byte for byte, and reads each answer (Content-Length,
/// chunked, or until close). Test code only: the server under test is a real library.
final class RawHTTPClient {
    struct Answer {
        var status: Int
        var headers: [String: String]   // lowercase names
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: Any? { try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) }
        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    private var fd: Int32 = -1
    private var pending: [UInt8] = []
    let port: Int
    /// The status line and headers of the last answer, as sent (for comparing answers byte for byte).
    private(set) var lastHead = ""

    /// `from`: the local address to connect from (another loopback address, 127.0.0.2, is
    /// another client to the server).
    init(port: Int, timeout: Int = 10, from: String? = nil) throws {
        self.port = port
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if let from {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(from)
            let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard bound == 0 else { close(fd); throw ClientError("bind \(from): \(String(cString: strerror(errno)))") }
        }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { close(fd); throw ClientError("connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))") }
    }

    deinit { if fd >= 0 { close(fd) } }

    struct ClientError: Error, CustomStringConvertible { var description: String; init(_ d: String) { description = d } }

    func send(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw ClientError("write: \(String(cString: strerror(errno)))") }
            off += n
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// A request with the usual framing; `body` gets its Content-Length.
    func request(_ method: String, _ target: String, headers: [(String, String)] = [], body: String? = nil) throws -> Answer {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        if let body { head += "Content-Length: \(body.utf8.count)\r\n" }
        try send(head + "\r\n" + (body ?? ""))
        return try answer()
    }

    /// Everything the server sends until it closes the connection (`closed`) or the read
    /// timeout passes.
    func readToEnd() -> (text: String, closed: Bool) {
        var out = pending
        pending = []
        while true {
            var buf = [UInt8](repeating: 0, count: 65536)
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return (String(decoding: out, as: UTF8.self), n == 0) }
            out += buf[0..<n]
        }
    }

    /// True when the server closed the connection (a read returns 0).
    func isClosed() -> Bool {
        var b: UInt8 = 0
        return recv(fd, &b, 1, 0) == 0
    }

    private func fill() throws {
        var buf = [UInt8](repeating: 0, count: 65536)
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0, errno == EINTR { return }
        guard n > 0 else { throw ClientError(n == 0 ? "connection closed" : "read: \(String(cString: strerror(errno)))") }
        pending += buf[0..<n]
    }

    func answer() throws -> Answer {
        while true {
            if let end = find([13, 10, 13, 10]) {
                let head = String(decoding: pending[0..<end], as: UTF8.self)
                lastHead = head
                pending.removeFirst(end + 4)
                var lines = head.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst().split(separator: " ")
                let status = statusLine.count > 1 ? Int(statusLine[1]) ?? 0 : 0
                var headers: [String: String] = [:]
                for l in lines { if let c = l.firstIndex(of: ":") { headers[l[..<c].lowercased()] = l[l.index(after: c)...].trimmingCharacters(in: .whitespaces) } }
                var body: [UInt8] = []
                if let n = headers["content-length"].flatMap(Int.init) {
                    while pending.count < n { try fill() }
                    body = Array(pending[0..<n]); pending.removeFirst(n)
                } else if headers["transfer-encoding"]?.lowercased() == "chunked" {
                    while true {
                        while find([13, 10]) == nil { try fill() }
                        let e = find([13, 10])!
                        let size = Int(String(decoding: pending[0..<e], as: UTF8.self).split(separator: ";")[0], radix: 16) ?? 0
                        pending.removeFirst(e + 2)
                        while pending.count < size + 2 { try fill() }
                        body += pending[0..<size]; pending.removeFirst(size + 2)
                        if size == 0 { break }
                    }
                } else if status != 204, status != 304 {
                    while (try? fill()) != nil {}
                    body = pending; pending = []
                }
                return Answer(status: status, headers: headers, body: body)
            }
            try fill()
        }
    }

    private func find(_ needle: [UInt8]) -> Int? {
        guard pending.count >= needle.count else { return nil }
        for i in 0...(pending.count - needle.count) where pending[i] == needle[0] && Array(pending[i..<(i + needle.count)]) == needle { return i }
        return nil
    }
}
