/// A registry failure: a registration that does not validate, an import line that does not parse,
/// or SQLite refusing (locked past the busy timeout, disk full, corrupt file). Messages name the
/// field and never include handles, which are credentials of sorts.
public struct RegistryError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A verdict: the data does not validate, or the database refused it (disk full, corrupt file).
        case refused
        /// Another process held the write lock past the busy timeout (a large import).
        case busy
        /// The registry's database server cannot be reached (PostgreSQL restarting, network cut).
        case unavailable
    }

    public var message: String
    /// Busy and unavailable are worth trying again later: not verdicts on the data.
    public var kind: Kind

    public init(_ message: String, kind: Kind = .refused) {
        self.message = message
        self.kind = kind
    }

    public var description: String { message }
}
