/// A Huawei Push Kit message without its tokens: rendered once per job, sent to up to 1,000
/// tokens a request (`body(tokens:)`), and to one token at a time when each device's push carries
/// its own id (a tracked or secure job).
public struct HMSNotification: Sendable, Equatable {
    /// The members of `message` but `token` (`"android":{…},"data":"…"`), the id's place in them.
    public let members: IDTemplate
    /// A tracked push's id (`RenderedNotification.stamped`), written in where the body is written.
    public internal(set) var id: NotificationIDText?

    /// What Huawei accepts without the tokens (the message body, Push Kit's "message body
    /// size cannot exceed 4096 bytes", tokens not counted).
    public static let maxBodyBytes = 4096
    /// Tokens one request may carry at most (`80300010` otherwise).
    public static let maxTokensPerRequest = 1000
    /// The longest `android.ttl` Huawei takes: 15 days.
    public static let maxTTLSeconds = 1_296_000

    public init(members: IDTemplate) {
        self.members = members
        id = nil
    }

    /// The size Huawei limits: the body with an empty token list.
    public var bodyBytes: Int { Self.opening.count + members.count + Self.tokensOpening(members.count).count + Self.closing.count }

    /// `{"validate_only":false,"message":{…,"token":["…",…]}}` for `tokens` (1 to 1,000).
    public func body(tokens: [String]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bodyBytes + tokens.reduce(0) { $0 + $1.utf8.count + 3 })
        out.append(contentsOf: Self.opening)
        members.write(id, into: &out)
        out.append(contentsOf: Self.tokensOpening(members.count))
        for (i, token) in tokens.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.writeString(token, into: &out)
        }
        out.append(contentsOf: Self.closing)
        return out
    }

    /// Whether two pushes can share one request: the same bytes but the tokens.
    public func sendsLike(_ other: HMSNotification) -> Bool { members.stamped(id) == other.members.stamped(other.id) }

    private static let opening = Array(#"{"validate_only":false,"message":{"#.utf8)
    private static func tokensOpening(_ membersCount: Int) -> [UInt8] { Array((membersCount > 0 ? #","token":["# : #""token":["#).utf8) }
    private static let closing = Array("]}}".utf8)
}
