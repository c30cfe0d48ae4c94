import PushspoolCore
import PushspoolHTTP

/// Builds `POST /3/device/<token>` requests: a pure function of its inputs, so tests compare the
/// result byte for byte. Whatever Apple would refuse for sure (payload size, collapse-id length,
/// token format) is refused here, before a stream is spent on it.
public struct APNsRequestBuilder: Sendable {
    /// `https://api.push.apple.com`, the sandbox host, or the config's `endpoint`.
    public var baseURL: String { didSet { devicePrefix = baseURL + "/3/device/" } }
    /// The bundle id; push types that need a suffix get it added here.
    public var topic: String
    public var timeout: Double
    /// `<baseURL>/3/device/`, made once: a device's URL is this and its token.
    private var devicePrefix: String

    public init(baseURL: String, topic: String, timeout: Double = 30) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        devicePrefix = base + "/3/device/"
        self.topic = topic
        self.timeout = timeout
    }

    /// Why a notification was not sent, with what the result log records.
    public struct Refusal: Error, Sendable, Equatable {
        public var disposition: Disposition
        public var reason: String
    }

    /// New on every request (the path names the device): never put in the HPACK table.
    static let unindexed = [":path", "apns-id"]
    /// The answer's fields `APNsProvider.classify` reads.
    static let read = ["apns-id", "retry-after"]

    /// Topic suffixes Apple requires for some push types (where each comes from: Providers.md,
    /// "Push types"). `alert` and `background` go to the bundle id itself.
    static let topicSuffix: [String: String] = [
        "voip": ".voip", "location": ".location-query", "liveactivity": ".push-type.liveactivity",
        "complication": ".complication", "fileprovider": ".pushkit.fileprovider", "pushtotalk": ".voip-ptt",
        "widgets": ".push-type.widgets",
    ]

    /// `now`: Unix seconds at send time (for `apns-expiration`). `apnsID`: lowercase UUID.
    /// `authorization`: `bearer <jwt>` when the caller keeps it (one string for every request
    /// signed with the same token); made from `jwt` otherwise.
    /// `topic`: the device's app's bundle id, when it is not this builder's own.
    public func build(deviceToken: String, notification n: APNsNotification, jwt: String, authorization: String? = nil,
                      apnsID: String, now: Int, topic appTopic: String? = nil) -> Result<HTTPRequest, Refusal> {
        let topic = appTopic ?? self.topic
        guard let token = Self.normalizedToken(deviceToken) else {
            return .failure(Refusal(disposition: .deviceGone(since: nil), reason: APNsReason.badDeviceToken.rawValue))
        }
        let limit = APNsPushType(rawValue: n.pushType)?.payloadLimit ?? APNsNotification.maxPayloadBytes
        guard n.payloadCount <= limit else {
            return .failure(Refusal(disposition: .rejected,
                                    reason: "\(APNsReason.payloadTooLarge.rawValue): \(n.payloadCount) bytes, limit \(limit)"))
        }
        guard n.payloadCount > 0 else {
            return .failure(Refusal(disposition: .rejected, reason: APNsReason.payloadEmpty.rawValue))
        }
        if let c = n.collapseID, c.utf8.count > 64 {
            return .failure(Refusal(disposition: .rejected,
                                    reason: "\(APNsReason.badCollapseId.rawValue): \(c.utf8.count) bytes, limit 64"))
        }
        var fullTopic = topic
        if n.pushType != "alert", let suffix = Self.topicSuffix[n.pushType], !topic.hasSuffix(suffix) { fullTopic += suffix }
        // Background pushes must be priority 5: 10 is an error there.
        let priority = n.pushType == "background" ? 5 : n.priority

        // The common request (no expiration, no collapse id) in one allocation: this runs for every device.
        var fields = [HTTPField("authorization", authorization ?? "bearer " + jwt), HTTPField("apns-topic", fullTopic),
                      HTTPField("apns-push-type", n.pushType),
                      HTTPField("apns-priority", priority == 10 ? "10" : priority == 5 ? "5" : String(priority)),
                      HTTPField("apns-id", apnsID), HTTPField("content-type", "application/json")]
        var optional: [HTTPField] = []
        // 0 means "deliver now or never"; otherwise Apple stores it until send time + ttl.
        if let ttl = n.ttlSeconds { optional.append(HTTPField("apns-expiration", ttl <= 0 ? "0" : String(now + ttl))) }
        if let c = n.collapseID { optional.append(HTTPField("apns-collapse-id", c)) }
        if !optional.isEmpty { fields.insert(contentsOf: optional, at: 4) }
        let url = Self.joined(devicePrefix, token)
        return .success(HTTPRequest(method: "POST", url: url, fields: fields, body: n.payload, timeout: timeout,
                                    unindexedHeaders: Self.unindexed, responseHeaders: Self.read))
    }

    /// `prefix` then `rest` as one new string, made at its final size: `+` copies the prefix into
    /// a string of its own size and grows it for the rest, about 800 instructions a device.
    static func joined(_ prefix: String, _ rest: String) -> String {
        let joined = prefix.utf8.withContiguousStorageIfAvailable { p in
            rest.utf8.withContiguousStorageIfAvailable { r in
                String(unsafeUninitializedCapacity: p.count + r.count) { out in
                    _ = UnsafeMutableBufferPointer(rebasing: out[..<p.count]).initialize(from: p)
                    _ = UnsafeMutableBufferPointer(rebasing: out[p.count...]).initialize(from: r)
                    return p.count + r.count
                }
            }
        }
        return (joined ?? nil) ?? prefix + rest
    }

    /// Lowercase hex of even length (32 bytes today; Apple says not to assume a length). Spaces
    /// and angle brackets from an `NSData` description are tolerated; anything else is refused.
    static func normalizedToken(_ raw: String) -> String? {
        let utf8 = raw.utf8
        // The common case, a well-formed lowercase token, costs one scan of the contiguous bytes
        // and no copy.
        if utf8.withContiguousStorageIfAvailable(isLowerHex) ?? isLowerHex(Array(utf8)) {
            return utf8.count >= 16 && utf8.count <= 400 && utf8.count % 2 == 0 ? raw : nil
        }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count)
        for c in utf8 {
            switch c {
            case 0x30...0x39, 0x61...0x66: out.append(c)
            case 0x41...0x46: out.append(c | 0x20)
            case 0x20, 0x3C, 0x3E: continue          // space, <, >
            default: return nil
            }
        }
        return out.count >= 16 && out.count <= 400 && out.count % 2 == 0 ? String(decoding: out, as: UTF8.self) : nil
    }

    /// Every byte `0`–`9` or `a`–`f`. Eight bytes at a time (this runs for every device): for
    /// ASCII bytes, `b + 0x50` has its top bit set from `0` up and `b + 0x46` from past `9`,
    /// `b + 0x1F` from `a` up and `b + 0x19` from past `f`, with no carry from byte to byte.
    private static func isLowerHex(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, high = 0x80 &* ones
        var i = 0
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while i + 8 <= bytes.count {
                let x = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                let digit = (x &+ 0x50 &* ones) & ~(x &+ 0x46 &* ones)
                let letter = (x &+ 0x1F &* ones) & ~(x &+ 0x19 &* ones)
                guard x & high == 0, (digit | letter) & high == high else { return false }
                i += 8
            }
        }
        for b in bytes[i...] where !((b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x66)) { return false }
        return true
    }

    private static func isLowerHex(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBufferPointer(isLowerHex) }
}
