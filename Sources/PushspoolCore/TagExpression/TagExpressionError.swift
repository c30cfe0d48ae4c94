/// Why a tag expression did not parse, and where: `position` is the 0-based character offset of
/// the offending token (or the end of the text when something is missing there).
public struct TagExpressionError: Error, Sendable, Equatable, CustomStringConvertible {
    public var position: Int
    public var message: String

    public init(position: Int, message: String) {
        self.position = position
        self.message = message
    }

    public var description: String { "at position \(position): \(message)" }
}
