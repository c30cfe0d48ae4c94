import CTLS
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What every connection of one client trusts and offers: peer verification always on (there is
/// no way to turn it off), the system roots plus `tls.ca_file`, TLS 1.2 or later, and ALPN.
final class TLSContext: @unchecked Sendable {
    let ctx: OpaquePointer
    let alpn: [String]

    /// `alpn`: protocols in preference order ("h2", "http/1.1"). `rootsDirectory`: a hashed
    /// directory of roots instead of the system's (tests).
    init(extraCAPEM: String?, alpn: [String], rootsDirectory: String? = nil) throws(HTTPTransportError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            throw HTTPTransportError("SSL_CTX_new failed: \(TLSContext.errorText())", isPermanent: true)
        }
        self.ctx = ctx
        self.alpn = alpn
        _ = ctls_ctx_set_min_tls12(ctx)
        _ = ctls_ctx_set_modes(ctx)
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        // The system roots: the hashed directory where there is one (a root is read only when a
        // chain needs it), else the first bundle file found, else OpenSSL's built-in defaults.
        if let rootsDirectory {
            _ = SSL_CTX_load_verify_locations(ctx, nil, rootsDirectory)
        } else if TrustStore.hasHashedCerts(TrustStore.systemHashedDirectory) {
            _ = SSL_CTX_load_verify_locations(ctx, nil, TrustStore.systemHashedDirectory)
        } else if let bundle = TrustStore.systemBundlePaths.first(where: { FileManager.default.isReadableFile(atPath: $0) }) {
            _ = SSL_CTX_load_verify_locations(ctx, bundle, nil)
        } else {
            _ = SSL_CTX_set_default_verify_paths(ctx)
        }
        if let pem = extraCAPEM, !pem.isEmpty {
            let added = Self.addCertificates(pem: pem, to: SSL_CTX_get_cert_store(ctx))
            if added == 0 { throw Self.noCertificate }
        }
        var wire: [UInt8] = []
        for p in alpn { wire.append(UInt8(p.utf8.count)); wire += p.utf8 }
        // 0 is success here (OpenSSL's one inverted return).
        guard SSL_CTX_set_alpn_protos(ctx, wire, UInt32(wire.count)) == 0 else {
            throw HTTPTransportError("SSL_CTX_set_alpn_protos failed", isPermanent: true)
        }
    }

    deinit { SSL_CTX_free(ctx) }

    /// Names no config field: the caller knows which one the PEM came from.
    static let noCertificate = HTTPTransportError("holds no PEM certificate OpenSSL can read", isPermanent: true)

    /// Throws `noCertificate` unless `pem` (when given) holds at least one certificate.
    static func checkCertificates(_ pem: String?) throws(HTTPTransportError) {
        guard let pem, !pem.isEmpty else { return }
        guard let store = X509_STORE_new() else {
            throw HTTPTransportError("X509_STORE_new failed: \(errorText())", isPermanent: true)
        }
        defer { X509_STORE_free(store) }
        if addCertificates(pem: pem, to: store) == 0 { throw noCertificate }
    }

    private static func addCertificates(pem: String, to store: OpaquePointer?) -> Int {
        var bytes = Array(pem.utf8)
        return bytes.withUnsafeMutableBytes { raw -> Int in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return 0 }
            defer { BIO_free(bio) }
            var added = 0
            while let cert = PEM_read_bio_X509(bio, nil, nil, nil) {
                if X509_STORE_add_cert(store, cert) == 1 { added += 1 }
                X509_free(cert)
            }
            ERR_clear_error()   // the loop ends on "no start line"
            return added
        }
    }

    /// The oldest error on this thread's OpenSSL queue, as text (and the queue cleared).
    static func errorText() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "unknown error" }
        var buf = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buf, buf.count)
        return String(decoding: buf.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
    }
}

/// One TLS connection over a non-blocking TCP socket. `connect` (DNS, TCP, handshake, bounded by
/// a timeout) blocks and runs off the poll thread; `read`/`write` never block and belong to the
/// poll thread.
final class TLSSocket: @unchecked Sendable {
    let fd: Int32
    let ssl: OpaquePointer
    /// The protocol the server chose by ALPN ("" when it chose none).
    let alpn: String

    enum IO {
        case bytes(Int)
        case wouldBlock
        case closed
        case failed(String)
    }

    private init(fd: Int32, ssl: OpaquePointer) {
        self.fd = fd
        self.ssl = ssl
        var proto: UnsafePointer<UInt8>?
        var len: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &proto, &len)
        alpn = proto.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(len)), as: UTF8.self) } ?? ""
    }

    deinit {
        SSL_free(ssl)
        close(fd)
    }

    static func connect(host: String, port: Int, context: TLSContext, timeout: Double,
                        addressGuard: AddressGuard? = nil) throws(HTTPTransportError) -> TLSSocket {
        let deadline = monotonicNow() + timeout
        let fd = try tcpConnect(host: host, port: port, deadline: deadline, addressGuard: addressGuard)
        guard let ssl = SSL_new(context.ctx) else {
            close(fd)
            throw HTTPTransportError("SSL_new failed: \(TLSContext.errorText())")
        }
        // Writes with MSG_NOSIGNAL: a server closing the connection is EPIPE, never SIGPIPE.
        guard ctls_set_fd_nosigpipe(ssl, fd) == 1 else {
            SSL_free(ssl)
            close(fd)
            throw HTTPTransportError("TLS: cannot set up the socket: \(TLSContext.errorText())")
        }
        if isIPAddress(host) {
            _ = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        } else {
            _ = ctls_set_sni(ssl, host)
            _ = SSL_set1_host(ssl, host)
        }
        var handedOver = false
        defer { if !handedOver { SSL_free(ssl); close(fd) } }
        while true {
            ERR_clear_error()
            let rc = SSL_connect(ssl)
            if rc == 1 { break }
            let err = SSL_get_error(ssl, rc)
            let events: Int16
            switch err {
            case SSL_ERROR_WANT_READ: events = Int16(POLLIN)
            case SSL_ERROR_WANT_WRITE: events = Int16(POLLOUT)
            default:
                let verify = SSL_get_verify_result(ssl)
                if verify != X509_V_OK {
                    let why = String(cString: X509_verify_cert_error_string(verify))
                    throw HTTPTransportError("TLS: certificate of \(host) not trusted: \(why)", isPermanent: true)
                }
                let detail = err == SSL_ERROR_SYSCALL ? (errno == 0 ? "connection closed during the handshake" : String(cString: strerror(errno))) : TLSContext.errorText()
                // The server speaks none of the protocols we offered by ALPN: it will not change.
                let noProtocol = detail.contains("no application protocol")
                throw HTTPTransportError("TLS handshake with \(host):\(port) failed: \(noProtocol ? "the server offers none of \(context.alpn.joined(separator: ", ")) (ALPN)" : detail)",
                                         isPermanent: noProtocol)
            }
            try waitFor(fd, events: events, until: deadline, what: "TLS handshake with \(host):\(port)")
        }
        handedOver = true
        return TLSSocket(fd: fd, ssl: ssl)
    }

    /// `SSL_get_error` needs the thread's error queue empty before the call it explains. The
    /// caller empties it once before a run of reads or writes (`clearErrors`), and a failure
    /// empties it after itself, rather than a clear before every call: a successful `SSL_read`
    /// leaves nothing in the queue, and a clear per record cost a seventh of reading the record.
    static func clearErrors() { ERR_clear_error() }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> IO {
        let n = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        if n > 0 { return .bytes(Int(n)) }
        return ioFailure(n)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> IO {
        let n = SSL_write(ssl, bytes.baseAddress, Int32(bytes.count))
        if n > 0 { return .bytes(Int(n)) }
        return ioFailure(n)
    }

    private func ioFailure(_ rc: Int32) -> IO {
        let saved = errno
        defer { ERR_clear_error() }
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wouldBlock
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL:
            return saved == 0 || saved == ECONNRESET || saved == EPIPE ? .closed : .failed(String(cString: strerror(saved)))
        default: return .failed("TLS: \(TLSContext.errorText())")
        }
    }

    // MARK: TCP

    /// Each address `host` resolves to is checked by `addressGuard` right here, the one place
    /// it is connected to: a later answer of the resolver cannot slip past the check.
    private static func tcpConnect(host: String, port: Int, deadline: Double, addressGuard: AddressGuard?) throws(HTTPTransportError) -> Int32 {
        // Bounded by the connect deadline, as the connect itself is.
        let resolved = try Resolver.resolve(host, port: port, until: deadline)
        let list: UnsafeMutablePointer<addrinfo>? = resolved.list
        guard let first = list else { throw HTTPTransportError("cannot resolve \(host): no address") }
        var lastError = "no address"
        let checked = addressGuard.map { !$0.exempt(host) } ?? false
        var refused: String?, tried = false
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let ai = next {
            next = ai.pointee.ai_next
            if checked, let addressGuard, let why = addressGuard.refusal(host: host, address: ai.pointee.ai_addr) {
                refused = refused ?? why
                continue
            }
            tried = true
            let fd = socket(ai.pointee.ai_family, socketStream, 0)
            guard fd >= 0 else { lastError = String(cString: strerror(errno)); continue }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            #if canImport(Darwin)
            _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
            #endif
            if Glibc_connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) == 0 { return fd }
            if errno == EINPROGRESS {
                do {
                    try waitFor(fd, events: Int16(POLLOUT), until: deadline, what: "connect to \(host):\(port)")
                    var soError: Int32 = 0
                    var len = socklen_t(MemoryLayout<Int32>.size)
                    _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len)
                    if soError == 0 { return fd }
                    lastError = String(cString: strerror(soError))
                } catch {
                    close(fd)
                    throw error
                }
            } else {
                lastError = String(cString: strerror(errno))
            }
            close(fd)
        }
        // Every address refused: the same answer would come next time.
        if let refused, !tried { throw HTTPTransportError(refused, isPermanent: true) }
        throw HTTPTransportError("cannot connect to \(host):\(port): \(lastError)")
    }

    private static func waitFor(_ fd: Int32, events: Int16, until deadline: Double, what: String) throws(HTTPTransportError) {
        while true {
            let left = deadline - monotonicNow()
            guard left > 0 else { throw HTTPTransportError("\(what) timed out") }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let rc = poll(&p, 1, Int32(min(left * 1000, 60_000).rounded(.up)))
            if rc > 0 { return }
            if rc < 0 && errno != EINTR { throw HTTPTransportError("\(what): poll: \(String(cString: strerror(errno)))") }
        }
    }

    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

#if canImport(Glibc)
private let socketStream = Int32(SOCK_STREAM.rawValue)
private func Glibc_connect(_ fd: Int32, _ addr: UnsafeMutablePointer<sockaddr>!, _ len: socklen_t) -> Int32 { Glibc.connect(fd, addr, len) }
#else
private let socketStream = SOCK_STREAM
private func Glibc_connect(_ fd: Int32, _ addr: UnsafeMutablePointer<sockaddr>!, _ len: socklen_t) -> Int32 { Darwin.connect(fd, addr, len) }
#endif

/// Seconds on a monotonic clock (deadlines, PING timing).
func monotonicNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
