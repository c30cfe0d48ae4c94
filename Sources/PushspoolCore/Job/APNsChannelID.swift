/// An iOS 18 broadcast channel id as Apple hands it out (`apns-channel-id` of the channel
/// management API's 201): base64 text, e.g. `dHN0LXNydnItY2hubA==`. Checked for shape only;
/// whether the job's app has the channel is the registry's to say.
public enum APNsChannelID {
    public static let maxLength = 256
    public static let rule = "Apple's base64 channel id, 1-\(maxLength) characters of A-Z a-z 0-9 + / ="

    public static func isValid(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= maxLength && s.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "+") || b == UInt8(ascii: "/") || b == UInt8(ascii: "=")
        }
    }
}
