/// A registry failure: a registration that does not validate, an import line that does not parse,
/// or SQLite refusing (locked past the busy timeout, disk full, corrupt file). Messages name the
/// field and never include handles, which are credentials of sorts.
public struct RegistryError: Error, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
