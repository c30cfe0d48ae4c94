import PushspoolKit
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

import PushspoolCore

extension ListenAddress {
    /// A listening, non-blocking socket on this address, and the address it got.
    func listeningSocket() throws(ServerError) -> (Int32, ListenAddress) {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host ?? "0.0.0.0", String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw ServerError("http.listen: cannot resolve \(host ?? "0.0.0.0"): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, 0)
        guard fd >= 0 else { throw ServerError("http.listen: socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw ServerError("http.listen: cannot listen on \(self): \(why)")
        }
        guard listen(fd, 1024) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw ServerError("http.listen: cannot listen on \(self): \(why)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        var bound = self
        withUnsafeMutablePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                guard getsockname(fd, sa, &length) == 0 else { return }
                if sa.pointee.sa_family == sa_family_t(AF_INET) {
                    sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { bound.port = UInt16(bigEndian: $0.pointee.sin_port) }
                } else {
                    sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { bound.port = UInt16(bigEndian: $0.pointee.sin6_port) }
                }
            }
        }
        return (fd, bound)
    }
}
