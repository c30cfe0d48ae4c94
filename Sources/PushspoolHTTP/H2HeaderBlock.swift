import CNghttp2
import Foundation

/// A request's header block as nghttp2 takes it: the `nghttp2_nv` array and the names and values
/// it points at, in one allocation made once per request and freed with the request (the
/// pseudo-headers, then the caller's fields with names lowercased and the ones HTTP/2 forbids
/// dropped, then `content-length` if a body needs one). `submit` hands the array over as it is,
/// and a request sent again after a refusal reuses it.
///
/// Written through raw pointers, not appended to arrays: appending each name and value to a
/// `[UInt8]` and indexing the fields in a second array cost a twentieth of an APNs push's
/// instructions, in uniqueness checks and growth tests per append.
struct H2HeaderBlock: ~Copyable {
    /// The fields in order, pointing into the same allocation.
    let fields: UnsafeMutablePointer<nghttp2_nv>
    let count: Int

    /// Fields HTTP/2 forbids (RFC 9113 §8.2.2) or sets itself; dropped from the caller's headers.
    private static let dropped: [StaticString] = ["connection", "keep-alive", "transfer-encoding", "upgrade", "host", "proxy-connection"]
    private static let contentLength: StaticString = "content-length"
    private static let root: StaticString = "/"

    /// `pathStart`: where `:path` starts in the request's URL (its end: the path is `/`).
    init(request: HTTPRequest, authority: String, pathStart: Int) {
        // An upper bound of the text: every name and value, the URL for the path, the
        // pseudo-headers' names and "https" (34 bytes) and a length field with up to 20 digits.
        var text = request.method.utf8.count + authority.utf8.count + request.url.utf8.count + 1 + 34 + 14 + 20
        for f in request.fields { text += f.name.utf8.count + f.value.utf8.count }
        let capacity = request.fields.count + 5
        let arrayBytes = capacity * MemoryLayout<nghttp2_nv>.stride
        let raw = UnsafeMutableRawPointer.allocate(byteCount: arrayBytes + text, alignment: MemoryLayout<nghttp2_nv>.alignment)
        var w = Writer(fields: raw.bindMemory(to: nghttp2_nv.self, capacity: capacity),
                       text: (raw + arrayBytes).bindMemory(to: UInt8.self, capacity: text))
        w.add(":method", request.method)
        w.add(":scheme", "https")
        w.add(":authority", authority)
        var url = request.url
        url.withUTF8 { u in
            let path = u.count == pathStart ? UnsafeBufferPointer(start: Self.root.utf8Start, count: 1) : UnsafeBufferPointer(rebasing: u[pathStart...])
            w.add(":path", path, unindexed: request.unindexedHeaders.contains(":path"))
        }
        var hasLength = false
        for f in request.fields {
            let name = w.copy(f.name)
            // HTTP/2 field names are lowercase (RFC 9113 §8.2.1).
            for i in 0..<name.count where name[i] >= 0x41 && name[i] <= 0x5A { name[i] |= 0x20 }
            if Self.dropped.contains(where: { Self.named($0, name) }) {
                w.text = name.baseAddress!
                continue
            }
            if Self.named(Self.contentLength, name) { hasLength = true }
            let unindexed = !request.unindexedHeaders.isEmpty && request.unindexedHeaders.contains { Self.named($0, name) }
            w.append(name: name, value: w.copy(f.value), unindexed: unindexed)
        }
        if !hasLength && (!request.body.isEmpty || request.method == "POST" || request.method == "PUT") {
            w.add("content-length", String(request.body.count))
        }
        fields = w.fields
        count = w.count
    }

    deinit { UnsafeMutableRawPointer(fields).deallocate() }

    /// Field `i` as text, for tests.
    func field(_ i: Int) -> (name: String, value: String, unindexed: Bool) {
        let nv = fields[i]
        return (String(decoding: UnsafeBufferPointer(start: nv.name, count: nv.namelen), as: UTF8.self),
                String(decoding: UnsafeBufferPointer(start: nv.value, count: nv.valuelen), as: UTF8.self),
                nv.flags & UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) != 0)
    }

    /// Whether `name` is `candidate` (lengths compared first: this runs per field).
    private static func named(_ candidate: StaticString, _ name: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        candidate.utf8CodeUnitCount == name.count && memcmp(name.baseAddress!, candidate.utf8Start, name.count) == 0
    }

    private static func named(_ candidate: String, _ name: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        guard candidate.utf8.count == name.count else { return false }
        var c = candidate
        return c.withUTF8 { memcmp(name.baseAddress!, $0.baseAddress!, name.count) == 0 }
    }

    /// Where the next field and the next byte go.
    private struct Writer {
        let fields: UnsafeMutablePointer<nghttp2_nv>
        var text: UnsafeMutablePointer<UInt8>
        var count = 0

        init(fields: UnsafeMutablePointer<nghttp2_nv>, text: UnsafeMutablePointer<UInt8>) {
            self.fields = fields
            self.text = text
        }

        mutating func copy(_ s: String) -> UnsafeMutableBufferPointer<UInt8> {
            if let copied = s.utf8.withContiguousStorageIfAvailable({ copy($0) }) { return copied }
            var s = s
            return s.withUTF8 { copy($0) }
        }

        mutating func copy(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeMutableBufferPointer<UInt8> {
            let start = text
            if let base = bytes.baseAddress, bytes.count > 0 {
                start.update(from: base, count: bytes.count)
                text += bytes.count
            }
            return UnsafeMutableBufferPointer(start: start, count: bytes.count)
        }

        mutating func append(name: UnsafeMutableBufferPointer<UInt8>, value: UnsafeMutableBufferPointer<UInt8>, unindexed: Bool) {
            (fields + count).initialize(to: nghttp2_nv(
                name: name.baseAddress, value: value.baseAddress, namelen: name.count, valuelen: value.count,
                flags: UInt8(unindexed ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue)))
            count += 1
        }

        mutating func add(_ name: StaticString, _ value: String, unindexed: Bool = false) {
            let n = copy(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            append(name: n, value: copy(value), unindexed: unindexed)
        }

        mutating func add(_ name: StaticString, _ value: UnsafeBufferPointer<UInt8>, unindexed: Bool = false) {
            let n = copy(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            append(name: n, value: copy(value), unindexed: unindexed)
        }
    }
}
