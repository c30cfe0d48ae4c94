/// Bytes rendered once for a job and shared by every device's push, with where a tracked job's id
/// goes in them (`PayloadRenderer.idSlot`, found once when the job is rendered). A device's bytes
/// are these with its id written over the slot as they are copied to where they are sent (the
/// slot and an id have the same length, so nothing else moves): no copy of their own per device.
public struct IDTemplate: Sendable, Equatable {
    public let bytes: [UInt8]
    /// Where the slot starts; nil for an untracked job's bytes.
    public let slot: Int?

    public init(_ bytes: [UInt8], slot: Int? = nil) {
        self.bytes = bytes
        self.slot = slot.flatMap { $0 >= 0 && $0 + NotificationIDText.count <= bytes.count ? $0 : nil }
    }

    public var count: Int { bytes.count }

    /// The bytes with `id` in the slot: a new array only when there are both.
    public func stamped(_ id: NotificationIDText?) -> [UInt8] {
        guard let id, let slot else { return bytes }
        var out = bytes
        out.withUnsafeMutableBytes { o in
            id.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: o[slot..<(slot + $0.count)]).copyMemory(from: $0) }
        }
        return out
    }

    /// Appends the bytes, with `id` in the slot, to `out`.
    public func write(_ id: NotificationIDText?, into out: inout [UInt8]) {
        guard let id, let slot else {
            out.append(contentsOf: bytes)
            return
        }
        bytes.withUnsafeBufferPointer { b in
            out.append(contentsOf: UnsafeBufferPointer(rebasing: b[..<slot]))
            id.withUnsafeBytes { out.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: b[(slot + NotificationIDText.count)...]))
        }
    }

    /// The slot of a JSON rendering: the value of its last `"key":` member that holds the slot
    /// (the renderer adds the id's member after everything of the job's own).
    public static func slot(ofMember key: String, in bytes: [UInt8]) -> Int? {
        var pattern: [UInt8] = []
        JSONValue.writeString(key, into: &pattern)
        pattern.append(UInt8(ascii: ":"))
        pattern.append(UInt8(ascii: "\""))
        let start = pattern.count
        pattern += PayloadRenderer.idSlot.utf8
        pattern.append(UInt8(ascii: "\""))
        return lastOffset(of: pattern, in: bytes).map { $0 + start }
    }

    private static func lastOffset(of pattern: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= pattern.count else { return nil }
        var i = bytes.count - pattern.count
        while i >= 0 {
            if bytes[i] == pattern[0] && bytes[i..<(i + pattern.count)].elementsEqual(pattern) { return i }
            i -= 1
        }
        return nil
    }
}
