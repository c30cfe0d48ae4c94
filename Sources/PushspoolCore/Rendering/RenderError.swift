/// A message that cannot be rendered for a platform (over the size limit, a reserved key, an
/// override the service would refuse). The job fails as a whole: no target could take it.
public struct RenderError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The job field at fault: `message`, `data.aps`, `payload.fcm.token`…
    public var field: String
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { field.isEmpty ? message : "\(field): \(message)" }
}
