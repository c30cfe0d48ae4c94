import Foundation

/// A request's header block as nghttp2 takes it: names and values back to back in one byte array,
/// `fields` indexing into it. Built once per request (the pseudo-headers, then the caller's
/// headers with names lowercased and the ones HTTP/2 forbids dropped, then `content-length` if a
/// body needs one). A struct with mutating methods, not closures over local arrays: a closure
/// value capturing them would box them and check exclusive access at run time on every byte
/// appended (a tenth of an APNs push's instructions went there).
struct H2HeaderBlock {
    private(set) var bytes: [UInt8] = []
    private(set) var fields: [H2Stream.Field] = []

    /// Fields HTTP/2 forbids (RFC 9113 §8.2.2) or sets itself; dropped from the caller's headers.
    private static let dropped: [StaticString] = ["connection", "keep-alive", "transfer-encoding", "upgrade", "host", "proxy-connection"]
    private static let contentLength: StaticString = "content-length"

    init(request: HTTPRequest, authority: String, path: String) {
        var size = request.method.utf8.count + authority.utf8.count + path.utf8.count + 64
        for (name, value) in request.headers { size += name.utf8.count + value.utf8.count }
        bytes.reserveCapacity(size)
        fields.reserveCapacity(request.headers.count + 5)
        add(":method", request.method)
        add(":scheme", "https")
        add(":authority", authority)
        add(":path", path, unindexed: request.unindexedHeaders.contains(":path"))
        var hasLength = false
        for (name, value) in request.headers {
            let n = bytes.count
            append(name)
            let v = bytes.count
            // HTTP/2 field names are lowercase (RFC 9113 §8.2.1).
            for i in n..<v where bytes[i] >= 0x41 && bytes[i] <= 0x5A { bytes[i] |= 0x20 }
            if Self.dropped.contains(where: { named($0, n, v) }) {
                bytes.removeSubrange(n...)
                continue
            }
            if named(Self.contentLength, n, v) { hasLength = true }
            append(value)
            let unindexed = !request.unindexedHeaders.isEmpty && request.unindexedHeaders.contains { named($0, n, v) }
            fields.append(H2Stream.Field(nameStart: n, nameLength: v - n, valueStart: v, valueLength: bytes.count - v, unindexed: unindexed))
        }
        if !hasLength && (!request.body.isEmpty || request.method == "POST" || request.method == "PUT") {
            add("content-length", String(request.body.count))
        }
    }

    private mutating func append(_ s: String) {
        var s = s
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }

    private mutating func add(_ name: StaticString, _ value: String, unindexed: Bool = false) {
        let n = bytes.count
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        let v = bytes.count
        append(value)
        fields.append(H2Stream.Field(nameStart: n, nameLength: v - n, valueStart: v, valueLength: bytes.count - v, unindexed: unindexed))
    }

    /// Whether the name at `bytes[n..<v]` is `candidate` (lengths compared first: this runs per header).
    private func named(_ candidate: StaticString, _ n: Int, _ v: Int) -> Bool {
        candidate.utf8CodeUnitCount == v - n && bytes.withUnsafeBufferPointer { memcmp($0.baseAddress! + n, candidate.utf8Start, v - n) == 0 }
    }

    private func named(_ candidate: String, _ n: Int, _ v: Int) -> Bool {
        guard candidate.utf8.count == v - n else { return false }
        var c = candidate
        return c.withUTF8 { u in bytes.withUnsafeBufferPointer { memcmp($0.baseAddress! + n, u.baseAddress!, v - n) == 0 } }
    }
}
