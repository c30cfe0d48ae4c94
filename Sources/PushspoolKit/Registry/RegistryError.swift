/// A registry failure: a registration that does not validate, an import line that does not parse,
/// or SQLite refusing (locked past the busy timeout, disk full, corrupt file). Messages name the
/// field and never include handles, which are credentials of sorts.
public struct RegistryError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// Another process held the write lock past the busy timeout (a large import): worth trying
    /// again later, not a verdict on the data.
    public var isBusy = false
    /// The registry's database server cannot be reached (PostgreSQL restarting, network cut):
    /// also worth trying again later. Implies `isBusy`.
    public var isUnavailable = false

    public init(_ message: String, isBusy: Bool = false, isUnavailable: Bool = false) {
        self.message = message
        self.isBusy = isBusy || isUnavailable
        self.isUnavailable = isUnavailable
    }

    public var description: String { message }
}
