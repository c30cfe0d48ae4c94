/// A notification id's 46 characters (`NotificationID.text`), held inline in six words: what each
/// device's push of a tracked job carries. It is made per device as the push is sent (a million
/// of them for one broadcast), so it has no array of its own: it travels inside the notification
/// it stamps, and is copied into the bytes a provider writes anyway.
public struct NotificationIDText: Sendable, Hashable {
    public static let count = NotificationID.textLength
    private var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)

    /// The id whose characters `write` puts in the `count` bytes it is given.
    public init(writing write: (UnsafeMutableRawBufferPointer) -> Void) {
        withUnsafeMutableBytes(of: &words) { write(UnsafeMutableRawBufferPointer(rebasing: $0[0..<Self.count])) }
    }

    /// nil unless `utf8` is as long as an id.
    public init?(_ utf8: some Collection<UInt8>) {
        guard utf8.count == Self.count else { return nil }
        self.init { $0.copyBytes(from: utf8) }
    }

    /// `body` given the id's `count` bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: words) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<Self.count])) }
    }

    public var utf8: [UInt8] { withUnsafeBytes { Array($0) } }
    public var text: String { withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

    public static func == (a: NotificationIDText, b: NotificationIDText) -> Bool {
        a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2
            && a.words.3 == b.words.3 && a.words.4 == b.words.4 && a.words.5 == b.words.5
    }

    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
