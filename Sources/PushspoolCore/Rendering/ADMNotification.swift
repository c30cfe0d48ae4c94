/// An Amazon Device Messaging message: `{"data":{…},"consolidationKey"?,"expiresAfter"?}`, one
/// request per device to its registration id.
public struct ADMNotification: Sendable, Equatable {
    /// The body, the id's place in it (a tracked or secure job's).
    public let rendered: IDTemplate
    /// A tracked push's id (`RenderedNotification.stamped`), written in where the body is written.
    public internal(set) var id: NotificationIDText?
    /// The size of `data` as JSON, what Amazon limits (`dataBytesLimit`).
    public let dataBytes: Int

    /// "The total size of the data may not be greater than 6 KB."
    public static let maxDataBytes = 6144

    public init(body: IDTemplate, dataBytes: Int) {
        rendered = body
        self.dataBytes = dataBytes
        id = nil
    }

    public var body: [UInt8] { rendered.stamped(id) }

    /// Appends the body, the id in its place, to `out` (an outbox line).
    public func writeBody(into out: inout [UInt8]) { rendered.write(id, into: &out) }
}
