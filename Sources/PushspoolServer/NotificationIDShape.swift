/// What a notification id can look like on the wire, checked before the desk is asked: URL- and
/// JSON-safe characters (`A-Z a-z 0-9 _ -`, as base64url and hex use), 16 to 128 of them.
///
/// A refusal here says nothing about any notification: the rule is public and no id outside it
/// was ever handed out, so answering `400` (naming the field) rather than the one `404` tells an
/// attacker nothing it did not know. Every id inside the rule, real or not, reaches the desk.
enum NotificationIDShape {
    static let minLength = 16
    static let maxLength = 128

    static func problem(_ id: String) -> String? {
        let bytes = id.utf8
        guard bytes.count >= minLength, bytes.count <= maxLength,
              bytes.allSatisfy({ isIDByte($0) }) else {
            return "must be \(minLength) to \(maxLength) of A-Z, a-z, 0-9, _ and - (a notification id as the push carried it)"
        }
        return nil
    }

    private static func isIDByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "-"): true
        default: false
        }
    }
}
