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
///
/// nghttp2 is told not to copy the names and values (`NO_COPY_NAME`, `NO_COPY_VALUE`): it keeps
/// pointers into this block until the HEADERS frame is sent or given up, and the block lives as
/// long as its stream, which stays in its connection until nghttp2 closes it (or, when a
/// connection is torn down, until after its last `mem_send`). Copying them cost nghttp2 a
/// second allocation and a lowercasing pass per request, about 1,900 instructions of a push.
/// The names are lowercase already, as nghttp2 then requires.
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
        // The fields read in place: iterating the array itself copies each field, a retain and a
        // release of both its strings per pass.
        let built = request.fields.withUnsafeBufferPointer { given in
            Self.build(request, given, authority: authority, pathStart: pathStart)
        }
        fields = built.0
        count = built.1
    }

    private static func build(_ request: HTTPRequest, _ given: UnsafeBufferPointer<HTTPField>, authority: String,
                              pathStart: Int) -> (UnsafeMutablePointer<nghttp2_nv>, Int) {
        var text = request.method.utf8.count + authority.utf8.count + request.url.utf8.count + 1 + 34 + 14 + 20
        for i in given.indices { text += given[i].name.utf8.count + given[i].value.utf8.count }
        let capacity = given.count + 5
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
        for i in given.indices {
            let name = w.copy(given[i].name)
            // HTTP/2 field names are lowercase (RFC 9113 §8.2.1).
            Self.lowercase(name)
            if Self.dropped.contains(where: { Self.named($0, name) }) {
                w.text = name.baseAddress!
                continue
            }
            if Self.named(Self.contentLength, name) { hasLength = true }
            let unindexed = !request.unindexedHeaders.isEmpty && request.unindexedHeaders.contains { Self.named($0, name) }
            w.append(name: name, value: w.copy(given[i].value), unindexed: unindexed)
        }
        if !hasLength && (!request.body.isEmpty || request.method == "POST" || request.method == "PUT") {
            w.add("content-length", count: request.body.count)
        }
        return (w.fields, w.count)
    }

    deinit { UnsafeMutableRawPointer(fields).deallocate() }

    /// Field `i`'s nghttp2 flags, for tests.
    func flags(_ i: Int) -> UInt8 { fields[i].flags }

    /// Field `i` as text, for tests.
    func field(_ i: Int) -> (name: String, value: String, unindexed: Bool) {
        let nv = fields[i]
        return (String(decoding: UnsafeBufferPointer(start: nv.name, count: nv.namelen), as: UTF8.self),
                String(decoding: UnsafeBufferPointer(start: nv.value, count: nv.valuelen), as: UTF8.self),
                nv.flags & UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) != 0)
    }

    /// ASCII `A`–`Z` to `a`–`z` in place, eight bytes at a time where no byte is past ASCII: for
    /// such bytes `b + 0x3F` has its top bit set from `A` up and `b + 0x25` from past `Z`, with no
    /// carry from byte to byte, and that bit shifted to 0x20 is the case bit to set. A name of
    /// eight bytes or more ends with the word of its last eight (lowercasing twice changes nothing).
    static func lowercase(_ name: UnsafeMutableBufferPointer<UInt8>) {
        guard let base = name.baseAddress else { return }
        let raw = UnsafeMutableRawPointer(base)
        var i = 0
        while i + 8 <= name.count, lowercaseWord(raw + i) { i += 8 }
        if i < name.count, name.count >= 8, i + 8 > name.count, lowercaseWord(raw + name.count - 8) { return }
        while i < name.count {
            if name[i] >= 0x41 && name[i] <= 0x5A { name[i] |= 0x20 }
            i += 1
        }
    }

    /// The eight bytes at `p` lowercased; false (and nothing changed) when one is past ASCII.
    private static func lowercaseWord(_ p: UnsafeMutableRawPointer) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, high = 0x80 &* ones
        let x = p.loadUnaligned(as: UInt64.self)
        guard x & high == 0 else { return false }
        let upper = (x &+ 0x3F &* ones) & ~(x &+ 0x25 &* ones) & high
        if upper != 0 { p.storeBytes(of: x | (upper >> 2), as: UInt64.self) }
        return true
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
                flags: UInt8((unindexed ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : 0) | Self.noCopy)))
            count += 1
        }

        mutating func add(_ name: StaticString, _ value: String, unindexed: Bool = false) {
            let n = copy(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            append(name: n, value: copy(value), unindexed: unindexed)
        }

        /// nghttp2 points into the block instead of copying it (see the type's comment).
        static let noCopy = NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue

        /// A field whose value is `count` in decimal, written in place.
        mutating func add(_ name: StaticString, count: Int) {
            let n = copy(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            var digits = 1, rest = count / 10
            while rest > 0 { digits += 1; rest /= 10 }
            var v = count
            for i in stride(from: digits - 1, through: 0, by: -1) {
                text[i] = UInt8(truncatingIfNeeded: 0x30 + v % 10)
                v /= 10
            }
            let value = UnsafeMutableBufferPointer(start: text, count: digits)
            text += digits
            append(name: n, value: value, unindexed: false)
        }

        mutating func add(_ name: StaticString, _ value: UnsafeBufferPointer<UInt8>, unindexed: Bool = false) {
            let n = copy(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            append(name: n, value: copy(value), unindexed: unindexed)
        }
    }
}
