/// Why a registration change was not made. `busy` and `unavailable` are worth trying again later
/// (the registry is write-locked by another process past its wait; its database server cannot be
/// reached); `invalid` names the field at fault; `other` is a refusal of the database (disk full).
public struct RegistrationError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case invalid(field: String), busy, unavailable, other
    }

    public var kind: Kind
    /// One sentence; for `invalid`, starting with the field.
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// A registry failure, by its kind.
    package init(_ e: RegistryError) {
        switch e.kind {
        case .busy: self.init(.busy, e.message)
        case .unavailable: self.init(.unavailable, e.message)
        case .refused: self.init(.other, e.message)
        }
    }

    public var description: String { message }
}
